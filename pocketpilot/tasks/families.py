"""Task families: how each template shape becomes one draft task on a world, from working calls.

Every family takes its tools from the template's selectors (declared semantics), its
arguments from the :class:`~.catalogue.Catalogue` (calls that worked), and its state criteria
from the diff the oracle's calls produced (:mod:`.grounding`). The phrasing comes from the
template's variants and the pools' clause patterns. A family that finds nothing that fits
returns None (counted as ``no_instance``); whether the draft measures anything is decided
afterwards by :mod:`.validate`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..executor.sandbox.diff import diff_values
from .catalogue import Catalogue, Probe, run_calls, state_strings
from .forms import ValueForm
from .gen_world import GenWorld
from .grounding import criteria_from_changes, patch_from_changes
from .phrasing import Phrasing, cap, fmt, label, lc, states, value_text, verb
from .template import Pools, Selector, Template, free_text_params
from .verify import matches

__all__ = ["Draft", "Drafter"]

_SEED_DAYS = ("2025-03-02", "2025-03-05", "2025-03-08", "2025-03-11")


@dataclass
class Draft:
    """A task before validation: everything but its id and split."""

    goal: str
    oracle: list[dict[str, Any]]
    criteria: list[dict[str, Any]]
    tools: list[str]
    initial_state: dict[str, Any] = field(default_factory=dict)
    memory: list[dict[str, Any]] = field(default_factory=list)


def _unchanged(allow: list[str]) -> dict[str, Any]:
    return {"kind": "unchanged", "allow": allow} if allow else {"kind": "unchanged"}


def _call(tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"call": tool, "args": dict(args)} if args else {"call": tool}


def _declare_form(criteria: list[dict[str, Any]], fld: str, written: str, form: ValueForm) -> None:
    """Give the state criteria of a new record whose text field ``fld`` holds ``written`` the
    value's declared forms for that field, so the record is judged as an answer about it is.
    """
    for c in criteria:
        fields = c.get("contains")
        if c.get("created") and isinstance(fields, dict) and fields.get(fld) == written:
            c["forms"] = {fld: form.model_dump(exclude_defaults=True)}


class Drafter:
    """Draws drafts for templates on one world; deterministic for a given seed and catalogue."""

    def __init__(self, world: GenWorld, catalogue: Catalogue, pools: Pools) -> None:
        self.world, self.cat, self.pools = world, catalogue, pools
        self.specs = catalogue.specs
        self.phrasing = Phrasing(world, catalogue, pools)
        self._ids: set[str] | None = None
        self._recovered: set[str] = set()
        """Setup tools that already gave a recovery draft (see :meth:`recovery`)."""
        self._families: dict[str, Callable[[Template, random.Random], Any]] = {
            "single_call": self.single_call,
            "multi_step": self.multi_step,
            "ordering": self.ordering,
            "conditional": self.conditional,
            "recovery": self.recovery,
            "clarification": self.clarification,
            "memory_recall": self.memory_recall,
            "memory_reconcile": self.memory_reconcile,
            "precondition": self.precondition,
            "handoff_read": self.handoff_read,
            "handoff_id": self.handoff_id,
            "information": self.information,
        }

    async def draft(self, template: Template, rng: random.Random) -> Draft | None:
        """One draft of ``template`` (None: nothing on this world fits it this time)."""
        return await self._families[template.family](template, rng)

    # ------------------------------------------------------------------ picking

    def _tools(self, selector: Selector, *, probed: bool = True) -> list[str]:
        return [n for n, s in self.specs.items() if selector.accepts(s) and (not probed or self.cat.probes(n))]

    def _probe(self, template: Template, role: str, rng: random.Random, *, exclude: Sequence[str] = (),
               writes: bool = True) -> Probe | None:
        selector = template.select.get(role, Selector())
        tools = [t for t in self._tools(selector) if t not in exclude]
        if writes:
            tools = [t for t in tools if any(p.writes for p in self.cat.probes(t))]
        if not tools:
            return None
        # an app first, then one of its tools: the suite is spread over domains, not over tool counts
        apps = sorted({self.world.app_of(x) for x in tools})
        app = rng.choice(apps)
        tool = rng.choice([x for x in tools if self.world.app_of(x) == app])
        probes = [p for p in self.cat.probes(tool) if p.writes or not writes]
        return rng.choice(probes) if probes else None

    def _texts(self, template: Template, role: str, tool: str) -> list[str]:
        """The free-text parameters of ``tool`` with the room ``role``'s selector asks for."""
        return free_text_params(self.specs[tool], room=template.select.get(role, Selector()).text_room)

    def _observe(self, tool: str) -> str | None:
        """A read of the same app that takes no arguments (how an agent finds a record's id)."""
        app = self.world.app_of(tool)
        for name, spec in self.specs.items():
            if (self.world.app_of(name) == app and (spec.effect == "read" or spec.read_only)
                    and not spec.parameters.get("required") and name != tool):
                return name
        return None

    def _exposed(self, *tools: str) -> list[str]:
        apps = {self.world.app_of(t) for t in tools}
        return [n for n in self.specs if self.world.app_of(n) in apps]

    def _is_id(self, value: str) -> bool:
        """Whether ``value`` is the id of a record of the world's state."""
        if self._ids is None:
            self._ids = set()
            stack: list[Any] = [self.world.base()]
            while stack:
                node = stack.pop()
                if isinstance(node, dict):
                    if isinstance(node.get("id"), str):
                        self._ids.add(node["id"])
                    stack.extend(node.values())
                elif isinstance(node, list):
                    stack.extend(node)
        return value in self._ids

    # ------------------------------------------------------------------ phrasing

    def noun(self, tool: str, args: dict[str, Any] | None = None, state: dict[str, Any] | None = None) -> str:
        """What a request calls the record ``tool`` acts on (see :meth:`.phrasing.Phrasing.noun`)."""
        return self.phrasing.noun(tool, args, state)

    def clause(self, tool: str, args: dict[str, Any], before: dict[str, Any], rng: random.Random,
               omit: Sequence[str] = ()) -> str:
        """How one call reads as part of a request (see :meth:`.phrasing.Phrasing.clause`)."""
        return self.phrasing.clause(tool, args, before, rng, omit)

    fmt = staticmethod(fmt)

    # ------------------------------------------------------------------ running

    async def _sequence(self, calls: list[tuple[str, dict[str, Any]]], patch: dict[str, Any] | None = None,
                        *, failing_first: bool = False) -> tuple[dict[str, Any], dict[str, Any], list[Any]] | None:
        """Run ``calls``; None unless each succeeded and changed the state (reads: succeeded)."""
        results, before, after, steps = await run_calls(self.world, calls, patch)
        prev = before
        for i, ((name, _), res, now) in enumerate(zip(calls, results, steps, strict=True)):
            spec = self.specs[name]
            if failing_first and i == 0:
                if res.ok:
                    return None
                prev = now
                continue
            if not res.ok:
                return None
            if spec.effect != "read" and not spec.read_only and now == prev:
                return None
            prev = now
        return before, after, results

    def _grounded(self, before: dict[str, Any], after: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
        return criteria_from_changes(before, after, diff_values(before, after))

    # ------------------------------------------------------------------ families

    async def single_call(self, t: Template, rng: random.Random) -> Draft | None:
        p = self._probe(t, "action", rng)
        if p is None:
            return None
        crit, allow = criteria_from_changes(p.before, p.after, p.changes)
        if not crit:
            return None
        action = self.clause(p.tool, p.args, p.before, rng)
        oracle = self._with_observe([p.tool], [_call(p.tool, p.args)])
        oracle.extend([_call(p.tool, p.args)] * (int(t.options.get("repeat", 1)) - 1))
        oracle.append({"finish": f"Done: {action}."})
        return Draft(self.fmt(t.goal, rng, action=action), oracle, [*crit, _unchanged(allow)], self._exposed(p.tool))

    def _with_observe(self, tools: list[str], steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for tool, step in zip(tools, steps, strict=True):
            # read an app's state before changing it: how an id is found, and what skills ask
            # ("read the current state first") before a toggle
            spec = self.specs[tool]
            look = None if spec.effect == "read" or spec.read_only else self._observe_call(tool, step.get("args") or {})
            if look is not None and look not in out:
                out.append(look)
            out.append(step)
        return out

    def _observe_call(self, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The read an agent makes before ``tool``: for a record, one whose result holds its id
        (skills gate an id that no earlier result returned); else the app's argument-less read.
        """
        spec = self.specs[tool]
        record_id = args.get(spec.id_arg) if spec.id_arg else None
        if isinstance(record_id, str):
            app = self.world.app_of(tool)
            needle = json.dumps(record_id)
            for name in self.specs:
                if self.world.app_of(name) != app or name == tool:
                    continue
                for p in self.cat.probes(name):
                    if not p.writes and needle in json.dumps(p.data, default=str):
                        return _call(p.tool, p.args)
        look = self._observe(tool)
        return _call(look) if look else None

    async def _chain(
        self, t: Template, rng: random.Random, roles: list[str]
    ) -> tuple[list[Probe], dict[str, Any], dict[str, Any]] | None:
        probes: list[Probe] = []
        for role in roles:
            used = [p.tool for p in probes]
            used_apps = {self.world.app_of(x) for x in used}
            p = None
            for _ in range(6):  # prefer another app, fall back to another tool
                cand = self._probe(t, role, rng, exclude=used)
                if cand is not None and (self.world.app_of(cand.tool) not in used_apps or _ == 5):
                    p = cand
                    break
            if p is None:
                return None
            probes.append(p)
        ran = await self._sequence([(p.tool, p.args) for p in probes])
        if ran is None:
            return None
        before, after, _ = ran
        return probes, before, after

    async def multi_step(self, t: Template, rng: random.Random) -> Draft | None:
        n = int(t.options.get("steps", 2))
        chain = await self._chain(t, rng, ["action"] * n)
        if chain is None:
            return None
        probes, before, after = chain
        crit, allow = self._grounded(before, after)
        clauses = {f"action{i + 1}": self.clause(p.tool, p.args, before, rng) for i, p in enumerate(probes)}
        oracle = self._with_observe([p.tool for p in probes], [_call(p.tool, p.args) for p in probes])
        oracle.append({"finish": "Done: " + "; ".join(clauses.values()) + "."})
        goal = self.fmt(t.goal, rng, **clauses)
        return Draft(goal, oracle, [*crit, _unchanged(allow)], self._exposed(*[p.tool for p in probes]))

    async def ordering(self, t: Template, rng: random.Random) -> Draft | None:
        chain = await self._chain(t, rng, ["first", "then"])
        if chain is None:
            return None
        (a, b), before, after = chain
        crit, allow = self._grounded(before, after)
        order = {"kind": "order", "before": {"tool": a.tool}, "after": {"tool": b.tool}}
        c1, c2 = self.clause(a.tool, a.args, before, rng), self.clause(b.tool, b.args, before, rng)
        oracle = self._with_observe([a.tool, b.tool], [_call(a.tool, a.args), _call(b.tool, b.args)])
        oracle.append({"finish": f"First {c1}, then {c2}."})
        return Draft(self.fmt(t.goal, rng, action1=c1, action2=c2), oracle, [*crit, order, _unchanged(allow)],
                     self._exposed(a.tool, b.tool))

    def _leaf(self, data: Any, rng: random.Random, *, numbers_only: bool = False,
              lists: bool = True, ids: bool = True) -> tuple[str, Any] | None:
        """A field of a read's result to ask about; ``ids=False``: none that holds a record's id
        (a person asks for a place's hours, never for its id).
        """
        node = data[0] if lists and isinstance(data, list) and data and isinstance(data[0], dict) else data
        if not isinstance(node, dict):
            return None
        leaves = [(k, v) for k, v in node.items()
                  if (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0)
                  or (not numbers_only and (isinstance(v, bool) or (isinstance(v, str) and 1 < len(v) <= 30)))]
        if not ids:
            leaves = [(k, v) for k, v in leaves if not (isinstance(v, str) and self._is_id(v))]
        return rng.choice(leaves) if leaves else None

    async def conditional(self, t: Template, rng: random.Random) -> Draft | None:
        branch = bool(t.options.get("branch", True))
        r = self._probe(t, "read", rng, writes=False)
        if r is None:
            return None
        leaf = self._leaf(r.data, rng, lists=False)  # "if enabled is on" says nothing about which record
        if leaf is None:
            return None
        key, v = leaf
        name = self.phrasing.field(key)
        d = rng.choice([5, 10, 15])
        if isinstance(v, bool):
            shown = v if branch else not v
            condition = f"{name} is {'on' if shown else 'off'}"
        elif isinstance(v, (int, float)):
            if branch:
                condition = f"{name} is below {v + d}" if rng.random() < 0.5 or v - d < 0 else f"{name} is above {v - d}"
            else:
                if v - d < 0:
                    return None
                condition = f"{name} is below {v - d}"
        else:
            if not branch:
                return None
            condition = f'{name} is "{v}"'
        w = self._probe(t, "action", rng, exclude=[r.tool])
        if w is None:
            return None
        read_app = self.phrasing.app(self.world.app_of(r.tool))
        action = self.clause(w.tool, w.args, w.before, rng)
        goal = self.fmt(t.goal, rng, read_app=read_app, condition=condition, action=action)
        tools = self._exposed(r.tool, w.tool)
        seen = {"kind": "call", "tool": r.tool}
        if not branch:
            oracle = [_call(r.tool, r.args), {"finish": f"{cap(name)} is {value_text(v)}, so I left everything as it is."}]
            criteria = [seen, {"kind": "no_call", "tool": w.tool, "args": w.args}, _unchanged([])]
            return Draft(goal, oracle, criteria, tools)
        ran = await self._sequence([(r.tool, r.args), (w.tool, w.args)])
        if ran is None:
            return None
        before, after, _ = ran
        crit, allow = self._grounded(before, after)
        oracle = [_call(r.tool, r.args), *self._with_observe([w.tool], [_call(w.tool, w.args)])]
        oracle.append({"finish": f"{cap(name)} is {value_text(v)}, so I did it: {action}."})
        order = {"kind": "order", "before": {"tool": r.tool}, "after": {"tool": w.tool}}
        return Draft(goal, oracle, [seen, *crit, order, _unchanged(allow)], tools)

    async def recovery(self, t: Template, rng: random.Random) -> Draft | None:
        # a suite of recoveries spread over what breaks: a setup tool that already gave a draft is
        # tried again only when no other one does (else the one conflict found most easily, a
        # cast to a second screen, fills the template whenever the draws happen to favour it)
        for fresh_only in (True, False):
            for _ in range(8):  # most setups break nothing; try a few
                s = self._probe(t, "setup", rng)
                if s is None:
                    return None
                if fresh_only and s.tool in self._recovered:
                    continue
                found = await self._recover_from(t, rng, s)
                if found is not None:
                    self._recovered.add(s.tool)
                    return found
        return None

    async def _recover_from(self, t: Template, rng: random.Random, s: Probe) -> Draft | None:
        patch = patch_from_changes(s.after, s.changes)
        # a few calls of every tool, so the tools with many working calls do not crowd out the rest
        actions = [p for tool in self._tools(t.select.get("action", Selector()))
                   for p in rng.sample(self.cat.probes(tool), min(3, len(self.cat.probes(tool)))) if p.writes]
        # a fix may be a no-op in the base world (connecting what is connected), so every argument
        # set tried for it counts, not only the ones that changed the base world
        fixes = [(tool, args) for tool in self._tools(t.select.get("fix", Selector()), probed=False)
                 for args in rng.sample(self.cat.tried(tool), min(3, len(self.cat.tried(tool))))]
        rng.shuffle(actions)
        rng.shuffle(fixes)
        # a setup breaks what shares its app's state first; a fix is found there first too
        setup_app = self.world.app_of(s.tool)
        actions.sort(key=lambda p: self.world.app_of(p.tool) != setup_app)
        for w in actions[:30]:
            app = self.world.app_of(w.tool)
            fixes.sort(key=lambda f: self.world.app_of(f[0]) not in (app, setup_app))
            res, _, _, _ = await run_calls(self.world, [(w.tool, w.args)], patch)
            if res[0].ok:
                continue
            for f_tool, f_args in fixes[:40]:
                if f_tool == w.tool:
                    continue
                ran = await self._sequence([(w.tool, w.args), (f_tool, f_args), (w.tool, w.args)], patch,
                                           failing_first=True)
                if ran is None:
                    continue
                before, after, _ = ran
                crit, allow = self._grounded(before, after)
                if not crit:
                    continue
                action = self.clause(w.tool, w.args, before, rng)
                fix = self.clause(f_tool, f_args, before, rng)
                look = self._observe(w.tool)
                oracle = [*([_call(look)] if look else []), _call(w.tool, w.args), _call(f_tool, f_args),
                          _call(w.tool, w.args),
                          {"finish": f"It failed at first; after I had to {fix}, it worked: {action}."}]
                return Draft(self.fmt(t.goal, rng, action=action), oracle, [*crit, _unchanged(allow)],
                             self._exposed(w.tool, f_tool), initial_state=patch)
        return None

    async def clarification(self, t: Template, rng: random.Random) -> Draft | None:
        if t.options.get("mode") == "ambiguous":
            return await self._ambiguous(t, rng)
        tools = self._tools(t.select.get("action", Selector()))
        if not tools:
            return None
        tool = rng.choice(tools)
        spec = self.specs[tool]
        props = spec.parameters.get("properties") or {}
        missing = [p for p in spec.parameters.get("required") or [] if props.get(p, {}).get("type") != "boolean"]
        if not missing:
            return None
        app = self.phrasing.app(self.world.app_of(tool))
        goal = self.fmt(t.goal, rng, app=app, verb=verb(spec), verb_lc=lc(verb(spec)), noun=self.noun(tool))
        oracle = [{"ask_user": f"Which {label(missing[0])} should I use?"}]
        criteria = [{"kind": "stop", "reason": ["ask_user"]}, {"kind": "no_call", "tool": tool}, _unchanged([])]
        return Draft(goal, oracle, criteria, self._exposed(tool))

    async def _ambiguous(self, t: Template, rng: random.Random) -> Draft | None:
        tools = self._tools(t.select.get("action", Selector()))
        probes = [p for tool in tools for p in self.cat.probes(tool) if p.writes]
        rng.shuffle(probes)
        # words that start two or more of the state's names ("Alice" of two contacts): a request
        # naming only the word is ambiguous where the argument picks a record (see _refers)
        state = {v for _, v in state_strings(self.world.base())}
        names = [v for v in state if " " in v]
        starts: dict[str, list[str]] = {}
        for v in names:
            starts.setdefault(v.split()[0], []).append(v)
        shared = {w: sorted(set(vs)) for w, vs in starts.items() if len(set(vs)) > 1 and len(w) > 2}
        if not shared:
            return None
        fresh = [n for n in self.pools.names if n not in state][:3]
        for p in probes[:40]:
            spec = self.specs[p.tool]
            texts = [a for a, v in p.args.items() if isinstance(v, str) and a not in (spec.id_arg,)]
            if not texts:
                continue
            pairs = [(a, w) for a in texts for w in sorted(shared)]
            rng.shuffle(pairs)
            found = None
            for arg, word in pairs:
                if await self._refers(p.tool, p.args, arg, word, shared[word], fresh):
                    found = arg, word
                    break
            if found is None:
                continue
            arg, word = found
            matching = shared[word]
            action = self.clause(p.tool, {**p.args, arg: word}, p.before, rng)
            oracle = [{"ask_user": f"Which {word} do you mean: {' or '.join(matching[:3])}?"}]
            criteria = [{"kind": "stop", "reason": ["ask_user"]}, {"kind": "no_call", "tool": p.tool},
                        _unchanged([])]
            return Draft(self.fmt(t.goal, rng, action=action), oracle, criteria, self._exposed(p.tool))
        return None

    async def _refers(self, tool: str, args: dict[str, Any], arg: str, word: str, matching: list[str],
                      fresh: list[str]) -> bool:
        """Whether ``arg`` picks one of the state's records, so that a ``word`` two of them start
        with is a question to ask, not a value to use: two of the ``matching`` names each work (and
        do different things), the word fails, and so do names the state doesn't hold. A value the
        schema refuses (too short a card number) or a new record's name is never ambiguous.
        """
        async def outcome(value: str) -> tuple[bool, str | None, Any]:
            results, before, after, _ = await run_calls(self.world, [(tool, {**args, arg: value})])
            error = results[0].error.code if results[0].error else None
            return results[0].ok and after != before, error, after

        ok, error, _ = await outcome(word)  # the cheapest test first: most pairs end here
        if ok or error == "invalid_arguments":
            return False
        (ok_a, _, after_a), (ok_b, _, after_b) = [await outcome(v) for v in matching[:2]]
        if not (ok_a and ok_b) or after_a == after_b:
            return False
        others = [await outcome(v) for v in fresh]
        valid = [o for o in others if o[1] != "invalid_arguments"]
        return bool(valid) and not any(o[0] for o in valid)

    def _seed(self, content: str, day: int, **extra: Any) -> dict[str, Any]:
        return {"content": content, "tier": "user", "source": "user_statement", "category": "preference",
                "created_at": f"{_SEED_DAYS[day % len(_SEED_DAYS)]}T18:00:00+01:00", **extra}

    async def memory_recall(self, t: Template, rng: random.Random) -> Draft | None:
        variant = t.options.get("variant", "plain")
        w = self._probe(t, "action", rng)
        if w is None or not t.memory:
            return None
        occasion = rng.choice(self.pools.occasions)
        action = self.clause(w.tool, w.args, w.before, rng)
        phrasing = t.memory
        criteria_extra: list[dict[str, Any]] = []
        memory: list[dict[str, Any]]
        if variant == "plain":
            memory = [self._seed(self.fmt(phrasing, rng, occasion=occasion, action=action), 1)]
        else:
            others = [p for p in self.cat.probes(w.tool) if p.writes and p.after != w.after
                      and not matches(w.args, p.args) and not matches(p.args, w.args)]
            if not others:
                return None
            o = rng.choice(others)
            other_action = self.clause(o.tool, o.args, o.before, rng)
            criteria_extra.append({"kind": "no_call", "tool": o.tool, "args": self._forbidden(o.tool, o.args, w.args)})
            mine = self._seed(self.fmt(phrasing[:1], rng, occasion=occasion, action=action), 2)
            if variant == "distractor":
                other_occasion = rng.choice([x for x in self.pools.occasions if x != occasion])
                memory = [self._seed(self.fmt(phrasing[:1], rng, occasion=other_occasion, action=other_action), 1), mine]
            elif variant == "other_owner":
                owner = rng.choice(self.pools.owners)
                memory = [mine, self._seed(self.fmt(phrasing[:1], rng, occasion=occasion, action=other_action), 3,
                                           owner=owner)]
            else:  # superseded: the older statement names the other call, the newer one replaces it
                memory = [self._seed(self.fmt(phrasing[:1], rng, occasion=occasion, action=other_action), 0),
                          self._seed(self.fmt(phrasing[-1:], rng, occasion=occasion, action=action), 3)]
        crit, allow = criteria_from_changes(w.before, w.after, w.changes)
        oracle = [{"memory_search": occasion}, *self._with_observe([w.tool], [_call(w.tool, w.args)]),
                  {"finish": f"Done, as you like it for {occasion}: {action}."}]
        goal = self.fmt(t.goal, rng, occasion=occasion, app=self.phrasing.app(self.world.app_of(w.tool)))
        return Draft(goal, oracle, [*crit, *criteria_extra, _unchanged(allow)], self._exposed(w.tool), memory=memory)

    def _forbidden(self, tool: str, other: dict[str, Any], mine: dict[str, Any]) -> dict[str, Any]:
        """The arguments that identify a call a task forbids: the record's declared name (or id) alone.

        With every argument of the forbidden call, doing the forbidden thing with one argument
        changed passed: on dev traces the bare planner created a distractor memory's event
        without its location and met ``no call create_event(title=…, location=…)``. The one
        identifying argument is kept only where the wanted call's value differs from it, so the
        criterion never forbids the task's own call; a tool that declares neither keeps all.
        """
        spec = self.specs[tool]
        for key in (spec.name_arg, spec.id_arg):
            if key and key in other and not (key in mine and (matches(mine[key], other[key]) or matches(other[key], mine[key]))):
                return {key: other[key]}
        return dict(other)

    async def memory_reconcile(self, t: Template, rng: random.Random) -> Draft | None:
        d = self._probe(t, "done", rng)
        if d is None or not t.memory:
            return None
        w = self._probe(t, "action", rng, exclude=[d.tool])
        if w is None:
            return None
        d_paths = {c.path for c in d.changes}
        if any(c.path in d_paths for c in w.changes):
            return None
        patch = patch_from_changes(d.after, d.changes)
        ran = await self._sequence([(w.tool, w.args)], patch)
        if ran is None:
            return None
        before, after, _ = ran
        crit, allow = self._grounded(before, after)
        kept, _ = criteria_from_changes(d.before, d.after, d.changes)
        kept = [{**c, "already_true": True} for c in kept]
        occasion = rng.choice(self.pools.occasions)
        done = self.clause(d.tool, d.args, d.before, rng)
        action = self.clause(w.tool, w.args, before, rng)
        memory = [{"content": self.fmt(t.memory, rng, occasion=occasion, done=done, action=action), "tier": "prospective",
                   "source": "user_statement", "created_at": "2025-03-09T18:00:00+01:00", "due_condition": occasion}]
        look = self._observe(d.tool)
        oracle = [{"memory_search": occasion}, *([_call(look)] if look else []),
                  *self._with_observe([w.tool], [_call(w.tool, w.args)]),
                  {"finish": f"The first part was already done; now {action}."}]
        mine = w.args if w.tool == d.tool else {}
        criteria = [*kept, {"kind": "no_call", "tool": d.tool, "args": self._forbidden(d.tool, d.args, mine)}, *crit,
                    _unchanged(allow)]
        apps = " and ".join(dict.fromkeys(self.phrasing.app(self.world.app_of(x)) for x in (d.tool, w.tool)))
        return Draft(self.fmt(t.goal, rng, occasion=occasion, apps=apps), oracle, criteria, self._exposed(d.tool, w.tool),
                     initial_state=patch, memory=memory)

    async def precondition(self, t: Template, rng: random.Random) -> Draft | None:
        chain = await self._chain(t, rng, ["first", "then"])
        if chain is None:
            return None
        (c, d), before, after = chain
        crit, allow = self._grounded(before, after)
        first, then = self.clause(c.tool, c.args, before, rng), self.clause(d.tool, d.args, before, rng)
        order = {"kind": "order", "before": {"tool": c.tool}, "after": {"tool": d.tool}}
        oracle = self._with_observe([c.tool, d.tool], [_call(c.tool, c.args), _call(d.tool, d.args)])
        oracle.append({"finish": f"First {first}; then {then}."})
        return Draft(self.fmt(t.goal, rng, first=first, then=then), oracle, [*crit, order, _unchanged(allow)],
                     self._exposed(c.tool, d.tool))

    async def information(self, t: Template, rng: random.Random) -> Draft | None:
        r = self._probe(t, "read", rng, writes=False)
        if r is None or (isinstance(r.data, list) and len(r.data) != 1):
            return None  # "the title" of a list of several says nothing about which one
        leaf = self._leaf(r.data, rng, ids=False)
        if leaf is None or isinstance(leaf[1], bool):
            return None
        key, v = leaf
        read = self.clause(r.tool, r.args, r.before, rng)
        spec = self.specs[r.tool]
        # a read of one record is a question about it ("what are FreshMart's hours?"), said by its name
        subject = None
        if spec.id_arg and set(r.args) == {spec.id_arg}:  # "the hours of X" says no other argument
            subject = self.phrasing.record(r.tool, r.before, str(r.args[spec.id_arg]), self.noun(r.tool, r.args, r.before))
        words = {"read": read, "key": self.phrasing.field(key)}
        if not r.args:  # "check Maps" says which read only where the read takes no arguments
            words["app"] = self.phrasing.app(self.world.app_of(r.tool))
        if subject is not None:
            words["subject"] = subject
        goal = self.fmt(t.goal, rng, **words)
        if states(v, goal):
            return None  # the request would hold its own answer
        look = self._observe_call(r.tool, r.args) if spec.id_arg else None
        oracle = [*([look] if look else []), _call(r.tool, r.args), {"finish": f"The {label(key)} is {v}."}]
        answer: dict[str, Any] = {"kind": "answer", "any_of": [str(v)]}
        form = self._value_form(key, v)
        if form is not None:
            answer["form"] = form.model_dump(exclude_defaults=True)
        criteria = [{"kind": "call", "tool": r.tool, "args": r.args}, answer, _unchanged([])]
        return Draft(goal, oracle, criteria, self._exposed(r.tool))

    def _value_form(self, key: str, v: Any) -> ValueForm | None:
        """The equivalent forms the world declares for result field ``key`` (its number form for a
        number whose field declares none); None: the value is matched as written.
        """
        own = self.phrasing.words
        form = own.value_forms.get(key)
        if form is None and isinstance(v, (int, float)) and not isinstance(v, bool):
            form = own.number_form
        return form

    async def handoff_read(self, t: Template, rng: random.Random) -> Draft | None:
        r = self._probe(t, "read", rng, writes=False)
        w = self._probe(t, "action", rng, exclude=[r.tool] if r else [])
        if r is None or w is None:
            return None
        leaf = self._leaf(r.data, rng, numbers_only=True)
        texts = self._texts(t, "action", w.tool)
        if leaf is None or not texts:
            return None
        key, v = leaf
        if any(str(v) in str(a) for a in r.args.values()):
            return None
        ft = rng.choice(texts)
        args = {**w.args, ft: str(v)}
        ran = await self._sequence([(r.tool, r.args), (w.tool, args)])
        if ran is None:
            return None
        before, after, _ = ran
        crit, allow = self._grounded(before, after)
        form = self._value_form(key, v)
        if form is not None:  # "8600" carries a balance of 8600.0 as well as the tool's own "8600.0"
            _declare_form(crit, ft, str(v), form)
        read = self.clause(r.tool, r.args, before, rng)
        action = self.clause(w.tool, args, before, rng, omit=[ft]) + f", with the {self.phrasing.field(key)} as the {label(ft)}"
        if states(v, read) or states(v, action):
            return None  # the request would hold what the helper is to find out
        delegate = {"instruction": cap(read) + ".", "tools": [r.tool],
                    "steps": [_call(r.tool, r.args), {"finish": f"{label(key)}: {v}"}]}
        oracle = [{"delegate": delegate}, *self._with_observe([w.tool], [_call(w.tool, args)]),
                  {"finish": f"The helper reported {v}; {action}."}]
        criteria = [*crit, {"kind": "delegated"}, {"kind": "order", "before": {"tool": r.tool}, "after": {"tool": w.tool}},
                    _unchanged(allow)]
        return Draft(self.fmt(t.goal, rng, read=read, key=self.phrasing.field(key), action=action), oracle, criteria,
                     self._exposed(r.tool, w.tool))

    async def handoff_id(self, t: Template, rng: random.Random) -> Draft | None:
        c = self._probe(t, "first", rng)
        if c is None or not isinstance(c.data, dict) or not isinstance(c.data.get("id"), str):
            return None
        w = self._probe(t, "then", rng, exclude=[c.tool])  # one tool twice would make the order unjudgeable
        if w is None:
            return None
        texts = self._texts(t, "then", w.tool)
        if not texts:
            return None
        record_id = c.data["id"]
        ft = rng.choice(texts)
        # the id itself: the criterion read off the diff then asks only that the text holds it,
        # in whatever words ("Note id: note-4"), as the request ("with that id in it") says
        args = {**w.args, ft: record_id}
        ran = await self._sequence([(c.tool, c.args), (w.tool, args)])
        if ran is None:
            return None
        before, after, _ = ran
        crit, allow = self._grounded(before, after)
        first = self.clause(c.tool, c.args, before, rng)
        then = self.clause(w.tool, args, before, rng, omit=[ft])
        oracle = [
            {"delegate": {"instruction": cap(first) + ".", "tools": [c.tool],
                          "steps": [_call(c.tool, c.args), {"finish": f"Saved as {record_id}."}]}},
            {"delegate": {"instruction": f"{cap(then)}; put the id from the artifacts in the {label(ft)}.",
                          "tools": [w.tool], "artifacts": {"id": record_id},
                          "steps": [_call(w.tool, args), {"finish": "Done."}]}},
            {"finish": f"Saved {record_id} and passed its id on."},
        ]
        criteria = [*crit, {"kind": "delegated", "artifact_values": [record_id]},
                    {"kind": "order", "before": {"tool": c.tool}, "after": {"tool": w.tool}}, _unchanged(allow)]
        goal = self.fmt(t.goal, rng, first=first, then=then, noun=self.noun(c.tool, c.args))
        return Draft(goal, oracle, criteria, self._exposed(c.tool, w.tool))
