"""Calls that work: arguments drawn from seeded pools and the world's own state, kept if the world accepts them.

The generator never guesses what a tool does from its name. It draws candidate arguments from
the parameter schema (booleans, enums, bounded integers, patterned strings) and from the pools
and the world's state (ids where the tool declares an id argument, existing names where it
reads by name, new names where it creates), calls the tool on a fresh world, and keeps the
calls that succeed: state-changing ones only if the state changed, reads only if they returned
something. What a call changed is then the evidence criteria are built from.

A state string with the shape of a value the world *declares* (a timestamp's day, a string some
tool's parameter pattern takes: a time, a PIN) is a typed value: it is offered where a pattern or
a read takes it, never as free text. A permissive world accepts "2025-03-14" as an SMS recipient
(it looks like a number), and a goal built on that call asks for nonsense.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..contracts import ToolCall, ToolResult, ToolSpec
from ..executor.sandbox import StateChange
from ..executor.sandbox.diff import diff_values
from .gen_world import GenWorld
from .template import Pools, param_type

__all__ = ["Catalogue", "Probe", "run_calls", "state_strings"]

_STARTS: dict[tuple[int, str], dict[str, Any]] = {}
"""Dumped start states by (world, patch); read-only by convention (nothing here mutates a dump)."""

_ATTEMPTS = 96
_OPTIONAL_SHARE = 0.3
_SWEEP = 400
_WIDEN = 150
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T")


@dataclass(frozen=True)
class Probe:
    """One call that worked on a fresh world: what it returned and what it changed."""

    tool: str
    args: dict[str, Any]
    data: Any
    before: dict[str, Any] = field(repr=False)
    after: dict[str, Any] = field(repr=False)
    changes: tuple[StateChange, ...] = ()

    @property
    def writes(self) -> bool:
        """Whether the call changed the state."""
        return bool(self.changes)


async def run_calls(
    world: GenWorld, calls: list[tuple[str, dict[str, Any]]], patch: dict[str, Any] | None = None
) -> tuple[list[ToolResult], dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    """Run ``calls`` in order on a fresh world: results, the state before, after, and after each call."""
    run = world.start(patch)
    key = (id(world), json.dumps(patch, sort_keys=True, default=str) if patch else "")
    before = _STARTS.get(key)
    if before is None:  # every fresh run from one start state dumps the same: once is enough
        before = _STARTS[key] = run.dump()
        if len(_STARTS) > 256:
            _STARTS.pop(next(iter(_STARTS)))
    results: list[ToolResult] = []
    steps: list[dict[str, Any]] = []
    for name, args in calls:
        results.append(await run.call(ToolCall(name=name, arguments=args)))
        steps.append(run.dump())
    return results, before, steps[-1] if steps else before, steps


def state_strings(dump: Any, key: str | None = None, *, days: set[str] | None = None) -> list[tuple[str, str]]:
    """Every short string leaf of a dumped state, with the key it sits under (ids, names, labels).

    ``days`` collects the strings that are a timestamp's day (the state stored a time, not text).
    """
    out: list[tuple[str, str]] = []

    def walk(node: Any, under: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, str(k))
        elif isinstance(node, list):
            for v in node:
                walk(v, under)
        elif isinstance(node, str) and _DATETIME.match(node):
            out.append((under, node[:10]))  # a timestamp's day: what a day-based read takes
            if days is not None:
                days.add(node[:10])
        elif isinstance(node, str) and 0 < len(node) <= 40:
            out.append((under, node))

    walk(dump, "")
    return list(dict.fromkeys(out))


class Catalogue:
    """Working calls of every tool of ``world`` from one start state, drawn with ``seed``."""

    def __init__(self, world: GenWorld, pools: Pools, *, seed: int = 0, patch: dict[str, Any] | None = None) -> None:
        self.world, self.pools, self.patch = world, pools, patch
        self._rng = random.Random(f"catalogue:{seed}")
        self.specs: dict[str, ToolSpec] = {t.name: t for t in world.tools()}
        self._probes: dict[str, list[Probe]] = {}
        self._failures: dict[str, list[dict[str, Any]]] = {}
        self._typed: set[str] = set()

    async def build(self) -> Catalogue:
        """Probe every tool (a few dozen calls each)."""
        base = self.world.start(self.patch).dump()
        strings = state_strings(base, days=self._typed)
        shapes = [re.compile(p) for p in declared_patterns(self.specs.values())]
        self._typed |= {v for _, v in strings if any(shape.fullmatch(v) for shape in shapes)}
        for name, spec in self.specs.items():
            self._probes[name], self._failures[name] = await self._probe(spec, strings)
        return self

    def probes(self, tool: str) -> list[Probe]:
        """Working calls of ``tool`` (state-changing ones changed something; reads returned data)."""
        return self._probes.get(tool, [])

    def tried(self, tool: str) -> list[dict[str, Any]]:
        """Every argument set tried for ``tool`` that validated, worked or not (a fix may be a no-op here)."""
        props = self.specs[tool].parameters.get("properties") or {}
        out = [p.args for p in self.probes(tool)] + self._failures.get(tool, [])
        return out if props else [{}]

    def tools_with_probes(self) -> list[str]:
        """The tools at least one probe call was found for."""
        return [t for t, p in self._probes.items() if p]

    def candidates(self, spec: ToolSpec, param: str, strings: list[tuple[str, str]]) -> list[Any]:
        """Candidate values of one parameter, from its schema, the pools and the state."""
        schema = (spec.parameters.get("properties") or {})[param]
        kind = param_type(schema)
        schema = _concrete(schema)
        pools = self.pools
        if kind == "boolean":
            return [True, False]
        if kind == "enum":
            return list(schema["enum"])
        if kind == "integer":
            lo, hi = schema.get("minimum"), schema.get("maximum")
            if lo is not None and hi is not None and hi - lo <= 30:
                return list(range(int(lo), int(hi) + 1))
            return [v for v in pools.integers if (lo is None or v >= lo) and (hi is None or v <= hi)]
        if kind == "number":
            return list(pools.numbers)
        if kind != "string":
            return []
        state_values = [v for _, v in strings]
        if "pattern" in schema:
            pattern = re.compile(schema["pattern"])
            return [s for s in dict.fromkeys([*pools.strings, *state_values]) if pattern.fullmatch(s)]
        if param == spec.id_arg:
            return [v for k, v in strings if k == "id"]
        if param == spec.name_arg and spec.effect == "create":
            return list(pools.names)
        if param == spec.name_arg:
            return list(dict.fromkeys(state_values))
        if spec.effect == "read":
            free = [p for p, s in (spec.parameters.get("properties") or {}).items()
                    if param_type(s) == "string" and "pattern" not in s and p != spec.id_arg]
            # several free strings drawn from the whole state almost never pair up (a unit with a
            # unit); names come in through the declared name argument, so the pools serve here
            return list(pools.strings) if len(free) > 1 else list(dict.fromkeys([*state_values, *pools.strings]))
        # free text: mostly the phrase pool (a message body), the state's strings too (a recipient),
        # never a typed value (a day, a time) the world only accepts because it accepts anything
        others = [v for k, v in dict.fromkeys(strings) if k != "id" and v not in self._typed]
        return [*pools.phrases * max(1, len(others) // len(pools.phrases)), *others]

    async def _probe(self, spec: ToolSpec, strings: list[tuple[str, str]]) -> tuple[list[Probe], list[dict[str, Any]]]:
        props: dict[str, Any] = spec.parameters.get("properties") or {}
        required = set(spec.parameters.get("required") or [])
        cands = {p: self.candidates(spec, p, strings) for p in props}
        if any(not cands[p] for p in required):
            return [], []
        rng = self._rng
        seen: set[str] = set()
        good: list[Probe] = []
        bad: list[dict[str, Any]] = []
        for _ in range(_ATTEMPTS if props else 1):
            args: dict[str, Any] = {}
            for p in props:
                if not cands[p]:
                    continue
                if p in required or p == spec.name_arg or rng.random() < _OPTIONAL_SHARE:
                    args[p] = rng.choice(cands[p])
            key = repr(sorted(args.items()))
            if key in seen:
                continue
            seen.add(key)
            result, probe = await self._try(spec, args)
            if probe is not None:
                good.append(probe)
            elif not result.ok and not (result.error and result.error.code == "invalid_arguments"):
                bad.append(args)
            elif result.ok and not _reads(spec):
                bad.append(args)  # worked, changed nothing here: still a fix where the state differs
        if not good and 0 < len(props) <= 3:
            good.extend(await self._sweep(spec, cands, required, seen))
        if not _reads(spec) and props:
            # from a working call, or (none worked) from drawn required arguments
            base = good[0].args if good else {p: rng.choice(cands[p]) for p in props if p in required and cands[p]}
            widened, free = await self._widen(spec, base, strings, seen)
            good.extend(widened)
            # a parameter that takes any text (a message body) reads best with the phrase pool;
            # keep the calls that have one there when there are such calls
            phrased = [p for p in good if all(p.args.get(k) in self.pools.phrases for k in free if k in p.args)]
            good = phrased or good
        return good, bad

    async def _widen(self, spec: ToolSpec, args: dict[str, Any], strings: list[tuple[str, str]],
                     seen: set[str]) -> tuple[list[Probe], set[str]]:
        """Each free string of a working call tried with every string of the state (every display a
        cast can go to, every contact a message can reach), the other arguments kept.

        Returns the new working calls of the *selective* parameters (those most values fail for:
        the state decides what is valid) and the names of the parameters that took nearly anything.
        """
        found: list[Probe] = []
        free: set[str] = set()
        props: dict[str, Any] = spec.parameters.get("properties") or {}
        for param in args:
            schema = props[param]
            if param_type(schema) != "string" or "pattern" in schema or param in (spec.id_arg, spec.name_arg):
                continue
            # one string of each key the state files strings under first; where one works, the
            # key's other strings too (the displays listed together, the contacts' names)
            by_key: dict[str, list[str]] = {}
            for k, v in strings:
                if k != "id" and v not in self._typed and v not in by_key.setdefault(k, []):
                    by_key[k].append(v)
            hits: list[Probe] = []
            tried = 0
            for values in list(by_key.values())[:_WIDEN]:
                for n, value in enumerate(values[:30]):
                    tried += 1
                    trial = {**args, param: value}
                    results, before, after, _ = await run_calls(self.world, [(spec.name, trial)], self.patch)
                    changes = tuple(diff_values(before, after))
                    if results[0].ok and changes:
                        hits.append(Probe(spec.name, trial, results[0].data, before, after, changes))
                    elif n == 0:
                        break
            if len(hits) > tried / 2:
                free.add(param)
                continue
            found.extend(hits)
        out: list[Probe] = []
        for hit in found:  # each selective value with fresh text in the free parameters
            trial = {**hit.args, **{f: self._rng.choice(self.pools.phrases) for f in free if f in hit.args}}
            key = repr(sorted(trial.items()))
            if key in seen:
                continue
            seen.add(key)
            if trial != hit.args:
                results, before, after, _ = await run_calls(self.world, [(spec.name, trial)], self.patch)
                changes = tuple(diff_values(before, after))
                if not (results[0].ok and changes):
                    continue
                hit = Probe(spec.name, trial, results[0].data, before, after, changes)
            out.append(hit)
        return out, free

    async def _sweep(self, spec: ToolSpec, cands: dict[str, list[Any]], required: set[str],
                     seen: set[str]) -> list[Probe]:
        """Every combination of the required parameters' candidates (capped), for a tool whose
        working arguments random draws missed: two units that convert into each other, or the one
        lock among the state's ids that takes the one PIN (a recovery's setup is there).
        """
        names = [p for p in cands if p in required and cands[p]]
        pools = {p: list(cands[p]) for p in names}
        found: list[Probe] = []
        if len(names) > 1 and math.prod(len(v) for v in pools.values()) > _SWEEP:
            widest = max(names, key=lambda p: len(pools[p]))
            pools[widest], found = await self._narrow(spec, pools, widest)
        combos = list(itertools.product(*(pools[p] for p in names)))
        self._rng.shuffle(combos)
        for values in combos[:_SWEEP]:
            if len(found) >= 12:
                break
            args = dict(zip(names, values, strict=True))
            key = repr(sorted(args.items()))
            if key in seen:
                continue
            seen.add(key)
            _, probe = await self._try(spec, args)
            if probe is not None:
                found.append(probe)
        return found

    async def _narrow(self, spec: ToolSpec, pools: dict[str, list[Any]], widest: str) -> tuple[list[Any], list[Probe]]:
        """The values of ``widest`` (the state's ids, say) that get further than most: each tried
        with the other parameters held, the ones whose call fails *differently* from the most
        common failure (a wrong PIN, not "no such record") are the ones worth crossing with the
        rest. Works from outcomes alone: no error code has to mean anything in particular.
        """
        held = {p: v[0] for p, v in pools.items() if p != widest}
        outcomes: dict[Any, str | None] = {}
        found: list[Probe] = []
        for value in pools[widest]:
            result, probe = await self._try(spec, {**held, widest: value})
            outcomes[value] = None if result.ok else (result.error.code if result.error else "error")
            if probe is not None:
                found.append(probe)
        common = Counter(outcomes.values()).most_common(1)[0][0]
        further = [v for v, outcome in outcomes.items() if outcome != common]
        return further or pools[widest], found

    async def _try(self, spec: ToolSpec, args: dict[str, Any]) -> tuple[ToolResult, Probe | None]:
        """One call from the start state: its result, and a probe if it worked and did something
        (a read returned data; any other call changed the state).
        """
        results, before, after, _ = await run_calls(self.world, [(spec.name, args)], self.patch)
        result = results[0]
        changes = tuple(diff_values(before, after))
        if result.ok and (result.data not in (None, [], {}, "") if _reads(spec) else changes):
            return result, Probe(spec.name, args, result.data, before, after, changes)
        return result, None


def _reads(spec: ToolSpec) -> bool:
    return spec.effect == "read" or spec.read_only


def declared_patterns(specs: Iterable[ToolSpec]) -> set[str]:
    """Every ``pattern`` the tools' parameter schemas declare, nested ones too (``anyOf``, items)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                found.add(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for spec in specs:
        walk(spec.parameters.get("properties") or {})
    return found


def _concrete(schema: dict[str, Any]) -> dict[str, Any]:
    for option in schema.get("anyOf", []):
        if option.get("type") not in (None, "null"):
            return {**schema, **option}
    return schema
