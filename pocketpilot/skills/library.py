"""A set of skills: the harness ``SkillStore``, plus the gates that apply without loading.

Preconditions attach to *tools*, not to loading: a planner that never loads the skill
governing ``power_off`` must still not power off over a pending write. So a session configured
with a library gets the ``when: always`` gates of every skill from the start
(:meth:`SkillLibrary.always_on_gates`), and a loaded skill adds its ``when: loaded`` gates
(requirements that depend on the user's intent, which the planner signals by loading it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

from .base import ToolGate
from .errors import SkillError, UnknownSkillError
from .gates import PreconditionGate
from .skill import LoadedSkill, Skill, read_skill

__all__ = ["SkillLibrary", "builtin_library_path"]

logger = logging.getLogger(__name__)


def builtin_library_path() -> Path:
    """The folder of the skills shipped with pocketpilot (one sub-folder per skill)."""
    return Path(str(resources.files("pocketpilot.skills") / "library"))


class SkillLibrary:
    """Skills by name; implements :class:`~pocketpilot.harness.base.SkillStore`.

    Args:
        skills: the skills; names must be unique.

    Raises:
        SkillError: two skills share a name.
    """

    def __init__(self, skills: Iterable[Skill]) -> None:
        self._skills: dict[str, Skill] = {}
        for skill in skills:
            if skill.name in self._skills:
                raise SkillError(skill.source, "name", f"{skill.name!r} is also defined in {self._skills[skill.name].source}")
            self._skills[skill.name] = skill

    @classmethod
    def from_dir(cls, path: str | Path) -> SkillLibrary:
        """Read every ``<path>/<name>/SKILL.md`` (sub-folders without one are an error).

        Raises:
            SkillError: the folder is missing or a skill is invalid.
        """
        root = Path(path)
        if not root.is_dir():
            raise SkillError(str(root), "", "skill library folder does not exist")
        folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
        return cls(read_skill(folder) for folder in folders)

    @classmethod
    def builtin(cls) -> SkillLibrary:
        """The library shipped with pocketpilot, covering the sandbox phone's apps."""
        return cls.from_dir(builtin_library_path())

    # ------------------------------------------------------------------ lookup

    def __contains__(self, name: object) -> bool:
        return name in self._skills

    def __len__(self) -> int:
        return len(self._skills)

    def names(self) -> list[str]:
        """Skill names, sorted."""
        return sorted(self._skills)

    def get(self, name: str) -> Skill:
        """The skill called ``name``.

        Raises:
            UnknownSkillError: no such skill.
        """
        try:
            return self._skills[name]
        except KeyError:
            raise UnknownSkillError(name, self.names()) from None

    def skills(self) -> list[Skill]:
        """Every skill, sorted by name."""
        return [self._skills[n] for n in self.names()]

    def governing(self, tool: str) -> list[str]:
        """Names of the skills that speak about ``tool`` (the tool→skill mapping of η)."""
        return [s.name for s in self.skills() if tool in s.governs]

    def check_tools(self, known: Iterable[str]) -> None:
        """Fail if a skill names a tool outside ``known`` (e.g. a typo in a precondition).

        Raises:
            SkillError: naming the skill file and the field with the unknown tool.
        """
        known_set = set(known)
        for skill in self.skills():
            for fname in ("requires", "exposes"):
                bad = [t for t in getattr(skill.meta, fname) if t not in known_set]
                if bad:
                    raise SkillError(skill.source, fname, f"unknown tool(s): {', '.join(bad)}")
            for i, pre in enumerate(skill.meta.preconditions):
                bad = sorted(pre.tools_referenced() - known_set)
                if bad:
                    raise SkillError(skill.source, f"preconditions[{i}]", f"unknown tool(s): {', '.join(bad)}")

    # ------------------------------------------------------------------ SkillStore

    def available(self, exposed_tools: Sequence[str]) -> list[str]:
        """Skill names whose required tools are all exposed."""
        exposed = set(exposed_tools)
        return [s.name for s in self.skills() if set(s.meta.requires) <= exposed]

    def load(self, name: str) -> LoadedSkill:
        """The loaded skill: guidance, exposed tools, and all its gates.

        Raises:
            UnknownSkillError: no such skill.
        """
        return self.get(name).load()

    # ------------------------------------------------------------------ gates without loading

    def gates(self, when: str | None = None) -> list[PreconditionGate]:
        """Every compiled gate of the library (only those with that ``when``, if given)."""
        return [g for s in self.skills() for g in s.gates if when is None or g.when == when]

    def always_on_gates(self, exposed_tools: Sequence[str] | None = None) -> list[ToolGate]:
        """The gates a session configured with this library enforces from its first step.

        Args:
            exposed_tools: the session's tools. When given, gates on tools that are not exposed
                are left out (they could never fire), and so are gates the planner could never
                satisfy with these tools (their evidence tools are all missing): a gate that can
                only block would turn a request into a dead end rather than a safe one.
        """
        out: list[ToolGate] = []
        for gate in self.gates("always"):
            if exposed_tools is not None:
                if not gate.tools & set(exposed_tools):
                    continue
                if not gate.satisfiable(exposed_tools):
                    logger.info("gate of %s on %s left out: none of its evidence tools is exposed", gate.skill, sorted(gate.tools))
                    continue
            out.append(gate)
        return out

