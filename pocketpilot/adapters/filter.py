"""Per-request guidance: η's entries narrowed to what is available now and to the request.

It never discovers tools and never executes anything: it only reads η, the tools and resources
the session already has, and the request text (for notes that apply to one kind of request,
such as asking for a helper). The work is set inclusion over precomputed frozensets plus one
precompiled regex per request-bound note, so it costs microseconds per step (see
``bench/bench_adapter.py``).

A note or skill written for a world (``world: sandbox``) applies only through that world's
tools (:mod:`pocketpilot.skills.worlds`): given the tools' specs (or names resolved through a
catalogue of them), a tool of another world that shares a name is not the one it speaks about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..contracts import ToolSpec
from ..skills.preconditions import PRECONDITION_ADAPTER
from ..skills.worlds import ToolSet
from .eta import Eta

__all__ = ["GuidanceFilter"]


class GuidanceFilter:
    """Compiled once from η; :meth:`guidance` is called per request (or per step).

    Args:
        eta: the configuration.
        skill_index: also emit one line per loadable skill with its description, so the
            planner knows what each skill is for (the prompt otherwise lists bare names).
    """

    def __init__(self, eta: Eta, *, skill_index: bool = True) -> None:
        self.version = eta.version
        self._notes = [
            (
                n.id,
                n.text,
                frozenset(n.requires_tools),
                frozenset(n.requires_resources),
                re.compile(n.when_request, re.IGNORECASE) if n.when_request else None,
                frozenset(n.covered_by),
                n.world,
            )
            for n in eta.notes
        ]
        self._skills = (
            [
                (name, s.description, frozenset(s.requires), s.world, _named(s.requires, s.exposes, s.preconditions))
                for name, s in sorted(eta.skills.items())
            ]
            if skill_index
            else []
        )

    def _applies(
        self,
        tools: ToolSet,
        res: frozenset[str],
        request: str | None,
        shown: frozenset[str] = frozenset(),
    ) -> list[tuple[str, str]]:
        out = []
        mine: dict[str | None, frozenset[str]] = {}
        for nid, text, need_t, need_r, pattern, covered_by, world in self._notes:
            if world not in mine:
                mine[world] = tools.of_world(world) if tools.admits(world, ()) else frozenset()
            if not (need_t <= mine[world] and need_r <= res) or covered_by & shown:
                continue
            if world is not None and not tools.admits(world, need_t):
                continue
            if pattern is not None and (request is None or not pattern.search(request)):
                continue
            out.append((nid, text))
        return out

    def note_ids(
        self,
        exposed_tools: Iterable[str | ToolSpec] | ToolSet,
        resources: Iterable[str] = (),
        request: str | None = None,
        shown_skills: Iterable[str] = (),
    ) -> list[str]:
        """Ids of the notes that apply (for traces and tests)."""
        tools, res, shown = ToolSet.of(exposed_tools), frozenset(resources), frozenset(shown_skills)
        return [nid for nid, _ in self._applies(tools, res, request, shown)]

    def guidance(
        self,
        exposed_tools: Sequence[str | ToolSpec] | Iterable[str | ToolSpec] | ToolSet,
        resources: Iterable[str] = (),
        *,
        request: str | None = None,
        shown_skills: Iterable[str] = (),
    ) -> list[str]:
        """Guidance entries whose required tools are exposed, resources configured, request matched.

        Args:
            exposed_tools: the tools exposed in this step: specs (a note or skill of a world
                applies only through that world's tools), a :class:`ToolSet`, or bare names
                (taken as η's own tools).
            resources: what else is configured: ``memory``, ``recall``, ``skills``, ``delegate``.
            request: the user's request; notes bound to a kind of request (``when_request``)
                apply only when it matches (never when it is None).
            shown_skills: skills whose procedures the context already holds; the skill index
                lists only the others, and notes they cover (``covered_by``) are left out.
        """
        tools, res, shown = ToolSet.of(exposed_tools), frozenset(resources), frozenset(shown_skills)
        out = [text for _, text in self._applies(tools, res, request, shown)]
        if self._skills and "skills" in res:
            lines = [
                f"{name}: {desc}"
                for name, desc, need, world, named in self._skills
                if need <= tools.of_world(world) and tools.admits(world, named) and name not in shown
            ]
            if lines:
                out.append("Skills (load_skill):\n" + "\n".join(f"- {line}" for line in lines))
        return out



def _named(requires: Iterable[str], exposes: Iterable[str], preconditions: Iterable[dict[str, Any]]) -> frozenset[str]:
    """Every tool a compiled skill entry names (η stores its preconditions as plain data)."""
    names = set(requires) | set(exposes)
    for pre in preconditions:
        names |= PRECONDITION_ADAPTER.validate_python(pre).tools_referenced()
    return frozenset(names)
