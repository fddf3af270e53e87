"""Offline compilation of η from tool schemas, a skill library and routing notes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..contracts import ToolSpec
from ..skills import SkillError, SkillLibrary
from ..skills.worlds import ToolSet
from .errors import EtaError
from .eta import Eta, PolicyEntry, RoutingNote, SkillEntry, ToolEntry, default_policy_entries
from .notes import DEFAULT_NOTES

__all__ = ["compile_eta", "note_for_tools", "sandbox_tool_apps"]


def sandbox_tool_apps() -> tuple[list[ToolSpec], dict[str, str]]:
    """Every sandbox tool's spec and the app each belongs to (the default compile input)."""
    from ..executor.sandbox import SandboxPhone

    phone = SandboxPhone()
    apps = {tool: app for app in phone.apps for tool in phone.tool_names(app)}
    return phone.registry().tools(), apps


def compile_eta(
    tools: Sequence[ToolSpec],
    library: SkillLibrary | None = None,
    notes: Iterable[RoutingNote] = DEFAULT_NOTES,
    *,
    apps: Mapping[str, str] | None = None,
    strict: bool = False,
    policies: Sequence[PolicyEntry] | None = None,
) -> Eta:
    """Compile η. The result depends on the inputs' content only (never on order or time).

    Args:
        tools: every tool the harness may expose.
        library: the skills; their tool references must all be among ``tools``.
        notes: routing notes; ids must be unique and their tools among ``tools``.
        apps: tool name → app name, when known.
        strict: refuse a skill or note that names a tool outside ``tools`` (a typo in the
            bundled kit). Otherwise such entries are dropped and counted (``eta.dropped``): a
            kit written for one world compiles against another app's tools, keeping what applies.
        policies: the harness policies, in order (default: the harness's default set).

    A skill or note written for a world (``world: sandbox``) keeps only when the tools it names
    are that world's: compiled against a world whose tools merely share their names, it is
    dropped like one that names a missing tool, and a note of a world that none of ``tools``
    declares is dropped too (the sandbox's "use ids (note, alarm, event)" means nothing there).

    Raises:
        EtaError: duplicate tool or note; with ``strict``, a reference to an unknown tool or to
            a tool of another world.
        SkillError: with ``strict``, a skill names a tool not in ``tools`` or of another world.
    """
    entries: dict[str, ToolEntry] = {}
    for spec in tools:
        if spec.name in entries:
            raise EtaError("compile", f"tool {spec.name!r} is listed twice")
        entries[spec.name] = ToolEntry(
            description=spec.description,
            parameters=spec.parameters,
            destructive=spec.destructive,
            semantics=spec.semantics(),
            app=(apps or {}).get(spec.name),
            world=spec.world,
            skills=library.governing(spec) if library is not None else [],
        )
    worlds = ToolSet.of(tools)
    skills: dict[str, SkillEntry] = {}
    dropped: dict[str, list[str]] = {"skills": [], "notes": []}
    if library is not None:
        if strict:
            library.check_tools(entries)
        for skill in library.skills():
            meta = skill.meta
            named = {*meta.requires, *meta.exposes, *(t for p in meta.preconditions for t in p.tools_referenced())}
            if not (named <= worlds.of_world(meta.world) and worlds.admits(meta.world, named)):
                if strict:  # every name is known (check_tools): a tool of another world, or none of its world
                    raise SkillError(skill.source, "world", _stranger("skill", meta.world, named, worlds))
                dropped["skills"].append(skill.name)
                continue
            skills[skill.name] = SkillEntry(
                version=meta.version,
                description=meta.description,
                world=meta.world,
                requires=list(meta.requires),
                exposes=list(meta.exposes),
                preconditions=[p.model_dump(mode="json") for p in meta.preconditions],
                keywords=list(meta.keywords),
                sha256=skill.sha256,
            )
    seen: set[str] = set()
    note_list = []
    for note in notes:
        note = note_for_tools(note, worlds)
        if note.id in seen:
            raise EtaError("compile", f"routing note id {note.id!r} is used twice")
        seen.add(note.id)
        unknown = [t for t in note.requires_tools if t not in entries]
        if unknown:
            if strict:
                raise EtaError("compile", f"routing note {note.id!r} requires unknown tool(s): {', '.join(unknown)}")
            dropped["notes"].append(note.id)
            continue
        if not (set(note.requires_tools) <= worlds.of_world(note.world) and worlds.admits(note.world, note.requires_tools)):
            if strict:
                raise EtaError("compile", f"routing note {note.id!r}: "
                                          f"{_stranger('note', note.world, set(note.requires_tools), worlds)}")
            dropped["notes"].append(note.id)
            continue
        note_list.append(note)
        if library is not None:
            strangers = [n for n in note.covered_by if n not in library]
            if strangers:
                names = ", ".join(strangers)
                raise EtaError("compile", f"routing note {note.id!r} is covered by unknown skill(s): {names}")
    chosen = list(policies) if policies is not None else default_policy_entries()
    eta = Eta(tools=entries, skills=skills, notes=note_list, policies=chosen)
    eta._dropped = {kind: names for kind, names in dropped.items() if names}
    return eta


def note_for_tools(note: RoutingNote, worlds: ToolSet) -> RoutingNote:
    """``note``, written against these tools: one that declares no world but requires tools of
    one declared world is about that world's tools, and says so.

    A note added by a revision or passed to a compile names η's tools, so η knows which tools
    it means; stating their world keeps it from a namesake of another world later. A note whose
    tools span several worlds, or declare none, is left as it is (the checks judge it).
    """
    if note.world is not None or not note.requires_tools:
        return note
    known = [worlds.world_of(t) for t in note.requires_tools if t in worlds.declared]
    if len(known) != len(note.requires_tools) or len(set(known)) != 1 or known[0] is None:
        return note
    return note.model_copy(update={"world": known[0]})


def _stranger(kind: str, world: str | None, named: set[str], worlds: ToolSet) -> str:
    """Why an entry written for ``world`` does not fit the compiled tools (for a strict compile)."""
    others = sorted(worlds.foreign_to(world) & named)
    if others:
        found = ", ".join(f"{n} ({worlds.world_of(n) or 'undeclared'})" for n in others)
        return (f"the {kind} is for world {world or 'undeclared'}, but these tools are of another: {found} "
                f"(a {kind} written for them declares their world)")
    return f"the {kind} is for world {world}, and no tool declares it"
