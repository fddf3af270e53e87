"""Where a tool's id argument gets its value: the earlier results that carried it, read off traces.

A small planner that calls a record tool with a name, a placeholder or a made-up id gets
``not_found`` and, under constrained decoding, nothing else: every argument error of the kind
is an ungrounded value, not a malformed one. The useful thing a tool's text can say is where
the id comes from. That is in the runs: a call of the tool that worked passed, in its declared
id argument (``ToolSpec.id_arg``), the id of a record an earlier step's result held (the record
found by the declared ``id_field`` of the tool that returned it). Such a call counts wherever
it is, in a failed episode or a sub-agent's run too: the call worked even if the task did not.

Only declarations and traces are read: which argument is an id (``id_arg``), which field of a
result's records is an id (``id_field``), and which values were equal. Nothing is read off a
tool's or an argument's name except to find the same declared id argument on another tool of
the same world (tools that take a ``card_id`` take the same card ids). An example written from
a call keeps no value of the run: the id is a slot naming the tool whose result carries it, the
other arguments are slots too, and only what the schema declares (an enum member, a const) and
booleans stay literal, as in :mod:`.distil`.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..adapters.experience import SLOT_KEY, ExperienceEntry
from ..contracts import Episode, ToolSpec
from ..harness.policies._text import records
from .distil import _allowed

__all__ = ["IdUse", "IdSources", "id_sources"]


@dataclass(frozen=True)
class IdUse:
    """One call that worked with an id an earlier result carried.

    Attributes:
        tool: the tool called.
        arg: its declared id argument.
        source: the tool whose earlier result held a record with that id (the first that did).
        arguments: the call's other arguments, as slots or the literals the schema declares.
        episode_id: the run it is from (provenance).
        world: the world the called tool declared in that run (a namesake of another world is
            another tool).
    """

    tool: str
    arg: str
    source: str
    arguments: tuple[tuple[str, str], ...]
    episode_id: str
    world: str | None = None


@dataclass
class IdSources:
    """Every id use found, by tool, and what each tool declares (``id_arg``, ``world``)."""

    uses: dict[str, list[IdUse]] = field(default_factory=lambda: defaultdict(list))
    id_args: dict[str, str] = field(default_factory=dict)
    worlds: dict[str, str | None] = field(default_factory=dict)
    """Tool → declared world, η's declaration first (what a method reads when not told one)."""

    def _own(self, tool: str, world: str | None) -> list[IdUse]:
        world = world if world is not None else self.worlds.get(tool)
        return [u for u in self.uses.get(tool, ()) if u.world == world]

    def sources(self, tool: str, world: str | None = None) -> list[str]:
        """The tools whose results carried the ids ``tool``'s working calls passed, most uses first."""
        return _ranked(u.source for u in self._own(tool, world))

    def example(self, tool: str, world: str | None = None) -> str | None:
        """A working call of ``tool``, slotted: ``get_x(x_id=<x_id from list_x's result>)``; None without one."""
        uses = self._own(tool, world)
        if not uses:
            return None
        best = self.sources(tool, world)[0]
        use = next(u for u in uses if u.source == best)
        args = [f"{use.arg}=<{use.arg} from {use.source}'s result>", *(f"{k}={v}" for k, v in use.arguments)]
        return f"{tool}({', '.join(args)})"

    def sibling_sources(self, tool: str, arg: str | None = None, world: str | None = None) -> list[str]:
        """Sources of the same declared id argument on the other tools of the same world, most uses first.

        For a tool no working call reached: the tools that take the same id (they declare the
        same ``id_arg``) show whose results carry it.
        """
        arg = arg or self.id_args.get(tool)
        if arg is None:
            return []
        world = world if world is not None else self.worlds.get(tool)
        return _ranked(u.source for t, uses in self.uses.items() if t != tool
                       for u in uses if u.arg == arg and u.world == world)


def _ranked(names: Any) -> list[str]:
    counts = Counter(names)
    return sorted(counts, key=lambda n: (-counts[n], n))


def _shown(spec: ToolSpec | None, arg: str, value: Any) -> str:
    """An argument as an example shows it: a declared value or a boolean as JSON, anything else a slot."""
    if isinstance(value, bool) or value is None or (not isinstance(value, (dict, list))
                                                    and value in _allowed(spec, arg)):
        return json.dumps(value)
    return f"<{arg}>"


def _specs(episode: Episode) -> dict[str, ToolSpec]:
    specs = {t.name: t for t in episode.header.tools}
    for step in episode.steps:
        specs.update((t.name, t) for t in step.tools_added)
    return specs


def _runs(episode: Episode) -> list[Episode]:
    """The episode and its sub-agents' episodes: each reads only its own results."""
    out = [episode]
    for step in episode.steps:
        for child in step.children:
            out.extend(_runs(child))
    return out


def _scan(episode: Episode, found: IdSources) -> None:
    specs = _specs(episode)
    for spec in specs.values():
        if spec.id_arg is not None:
            found.id_args.setdefault(spec.name, spec.id_arg)
            found.worlds.setdefault(spec.name, spec.world)
    earlier: list[tuple[int, str, Any]] = []  # (step, tool, data) of the results that worked
    for index, call, result in episode.tool_calls():
        if result is None or not result.ok:
            continue
        spec = specs.get(call.name)
        value = call.arguments.get(spec.id_arg) if spec is not None and spec.id_arg else None
        if spec is not None and spec.id_arg and isinstance(value, (str, int)) and not isinstance(value, bool):
            source = next((tool for step, tool, data in earlier if step < index
                           and (s := specs.get(tool)) is not None
                           and any(str(rec[s.id_field]) == str(value) for rec in records(data, s.id_field))), None)
            if source is not None:
                rest = tuple((k, _shown(spec, k, v)) for k, v in call.arguments.items() if k != spec.id_arg)
                found.uses[call.name].append(IdUse(tool=call.name, arg=spec.id_arg, source=source, arguments=rest,
                                                   episode_id=episode.header.episode_id, world=spec.world))
        earlier.append((index, call.name, result.data))


def _record_path(path: str | None, id_field: str) -> bool:
    """The path of a record's id as :func:`records` finds records: the result's own field, or a listing item's."""
    parts = (path or "").split(".")
    return parts == [id_field] or (len(parts) == 2 and parts[0].isdigit() and parts[1] == id_field)


def _scan_entry(entry: ExperienceEntry, declared: Mapping[str, Mapping[str, Any]], found: IdSources) -> None:
    """Id uses in a distilled workflow: an id argument whose slot came from an earlier call's result."""
    slots = {s.name: s for s in entry.slots}
    for call in entry.calls:
        arg = declared.get(call.tool, {}).get("id_arg")
        value = call.arguments.get(arg) if arg else None
        slot = slots.get(str(value.get(SLOT_KEY))) if isinstance(value, dict) and SLOT_KEY in value else None
        if slot is None or slot.source != "result" or slot.call is None or slot.call >= len(entry.calls):
            continue
        source = entry.calls[slot.call].tool
        id_field = declared.get(source, {}).get("id_field")
        if not id_field or not _record_path(slot.path, str(id_field)):
            continue  # the value sat in the result, but not as a record's declared id
        rest = tuple((k, json.dumps(v) if not isinstance(v, dict) else f"<{k}>")
                     for k, v in call.arguments.items() if k != arg)
        found.uses[call.tool].append(IdUse(tool=call.tool, arg=str(arg), source=source, arguments=rest,
                                           episode_id=entry.provenance[0], world=declared[call.tool].get("world")))


def id_sources(
    episodes: Sequence[Episode],
    experience: Sequence[ExperienceEntry] = (),
    declared: Mapping[str, Mapping[str, Any]] | None = None,
) -> IdSources:
    """The id uses of every call that worked in ``episodes`` (failed ones included) and in ``experience``.

    Args:
        episodes: runs of any verdict, their sub-agents' runs included; only calls that returned ok
            count, and an id only from a result of an earlier step of the same run.
        experience: distilled workflows (the verified successes' calls, already slotted).
        declared: tool name → declared semantics (η's ``ToolEntry.semantics``): the ``id_arg``
            and ``world`` of tools the episodes do not list, and of the entries' tools.
    """
    found = IdSources()
    for name, sem in (declared or {}).items():
        if sem.get("id_arg"):
            found.id_args[name] = str(sem["id_arg"])
            found.worlds[name] = sem.get("world")
    for episode in episodes:
        for run in _runs(episode):
            _scan(run, found)
    for entry in experience:
        _scan_entry(entry, declared or {}, found)
    return found
