"""Per-request guidance: η's entries narrowed to what is available now.

It never discovers tools and never executes anything: it only reads η and the names of the
tools and resources the session already has. The work is set inclusion over precomputed
frozensets, so it costs microseconds per step (see ``bench/bench_adapter.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
            (n.id, n.text, frozenset(n.requires_tools), frozenset(n.requires_resources)) for n in eta.notes
        ]
        self._skills = (
            [(name, s.description, frozenset(s.requires)) for name, s in sorted(eta.skills.items())]
            if skill_index
            else []
        )

    def note_ids(self, exposed_tools: Iterable[str], resources: Iterable[str] = ()) -> list[str]:
        """Ids of the notes that apply (for traces and tests)."""
        tools, res = frozenset(exposed_tools), frozenset(resources)
        return [nid for nid, _, need_t, need_r in self._notes if need_t <= tools and need_r <= res]

    def guidance(self, exposed_tools: Sequence[str] | Iterable[str], resources: Iterable[str] = ()) -> list[str]:
        """Guidance entries whose required tools are exposed and resources configured.

        Args:
            exposed_tools: names of the tools exposed in this step.
            resources: what else is configured: ``memory``, ``skills``, ``delegate``.
        """
        tools, res = frozenset(exposed_tools), frozenset(resources)
        out = [text for _, text, need_t, need_r in self._notes if need_t <= tools and need_r <= res]
        if self._skills and "skills" in res:
            lines = [f"{name}: {desc}" for name, desc, need in self._skills if need <= tools]
            if lines:
                out.append("Skills (load_skill):\n" + "\n".join(f"- {line}" for line in lines))
        return out
