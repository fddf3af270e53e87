"""A set of skills: the harness ``SkillStore``, plus the gates that apply without loading.

Preconditions attach to *tools*, not to loading: a planner that never loads the skill
governing ``power_off`` must still not power off over a pending write. So a session configured
with a library gets the ``when: always`` gates of every skill from the start
(:meth:`SkillLibrary.always_on_gates`), and a loaded skill adds its ``when: loaded`` gates
(requirements that depend on the user's intent, which the planner signals by loading it).

Every question about a session's tools (which skills are available, which gates are in force)
is answered for the tools of each skill's own world (:mod:`pocketpilot.skills.worlds`): given
the tools' specs, or a library bound to them (:meth:`SkillLibrary.bind`), a tool of another
world that shares a name with one a skill names neither makes the skill available nor is gated
by it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

from ..contracts import ToolSpec
from .base import ToolGate
from .errors import SkillError, UnknownSkillError
from .gates import PreconditionGate
from .skill import LoadedSkill, Skill, read_skill
from .worlds import Tools, ToolSet

__all__ = ["SkillLibrary", "builtin_library_path"]

logger = logging.getLogger(__name__)


def builtin_library_path() -> Path:
    """The folder of the skills shipped with pocketpilot (one sub-folder per skill)."""
    return Path(str(resources.files("pocketpilot.skills") / "library"))


class SkillLibrary:
    """Skills by name; implements :class:`~pocketpilot.harness.base.SkillStore`.

    Args:
        skills: the skills; names must be unique.
        catalogue: the session's tools, when the library is bound to one (see :meth:`bind`).

    Raises:
        SkillError: two skills share a name.
    """

    def __init__(self, skills: Iterable[Skill], *, catalogue: ToolSet | None = None) -> None:
        self._skills: dict[str, Skill] = {}
        self._catalogue = catalogue
        for skill in skills:
            if skill.name in self._skills:
                raise SkillError(skill.source, "name", f"{skill.name!r} is also defined in {self._skills[skill.name].source}")
            self._skills[skill.name] = skill

    def bind(self, tools: Tools | ToolSet) -> SkillLibrary:
        """The same skills, for one session's ``tools`` (specs): what a session is given.

        A session asks its skill store about bare tool names (``available``); bound, the
        library reads each name's declared world from ``tools``, so a tool of another world is
        never taken for the one a skill names. A name outside ``tools`` is undeclared.
        """
        return SkillLibrary(self._skills.values(), catalogue=ToolSet.of(tools))

    @property
    def catalogue(self) -> ToolSet | None:
        """The tools the library is bound to (None: unbound)."""
        return self._catalogue

    def tool_set(self, tools: Tools | ToolSet) -> ToolSet:
        """``tools`` with their declared worlds (bare names looked up in the bound catalogue)."""
        return ToolSet.of(tools, self._catalogue)

    def applies(self, skill: Skill, tools: Tools | ToolSet) -> bool:
        """Whether ``skill`` speaks about these tools at all (its world's, never a namesake)."""
        return self.tool_set(tools).admits(skill.world, skill.governs)

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

    def governing(self, tool: str | ToolSpec) -> list[str]:
        """Names of the skills that speak about ``tool`` (the tool→skill mapping of η).

        Given a spec, only skills of the world it declares: a namesake of another world is
        governed by none of them.
        """
        if isinstance(tool, ToolSpec):
            return [s.name for s in self.skills() if tool.name in s.governs and s.world == tool.world]
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

    def available(self, exposed_tools: Sequence[str | ToolSpec] | ToolSet) -> list[str]:
        """Skill names whose required tools are all exposed, as tools of the skill's world.

        Args:
            exposed_tools: specs (matched by their declared world) or names (looked up in the
                bound catalogue; unbound, taken as the skills' own tools).
        """
        tools = self.tool_set(exposed_tools)
        return [
            s.name
            for s in self.skills()
            if tools.admits(s.world, s.governs) and set(s.meta.requires) <= tools.of_world(s.world)
        ]

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

    def always_on_gates(self, exposed_tools: Sequence[str | ToolSpec] | ToolSet | None = None) -> list[ToolGate]:
        """The gates a session configured with this library enforces from its first step.

        Args:
            exposed_tools: the session's tools (specs or names, as for :meth:`available`). When
                given, only gates of the tools' worlds apply (a gate written for the sandbox's
                ``start_cast`` never holds another world's; one of the same skill about tools
                the session has from the sandbox still does), gates on tools that are not
                exposed are left out (they could never fire), and so are gates the planner
                could never satisfy with these tools (their evidence tools are all missing): a
                gate that can only block would turn a request into a dead end rather than a
                safe one.
        """
        if exposed_tools is None:
            return list(self.gates("always"))
        tools = self.tool_set(exposed_tools)
        out: list[ToolGate] = []
        for skill in self.skills():
            mine = tools.of_world(skill.world)
            for pre, gate in zip(skill.meta.preconditions, skill.gates, strict=False):
                if gate.when != "always" or not gate.tools & mine:
                    continue
                if not tools.admits(skill.world, pre.tools_referenced()):
                    continue  # it speaks about a tool the session has from another world
                if not gate.satisfiable(mine):
                    logger.info("gate of %s on %s left out: none of its evidence tools is exposed",
                                gate.skill, sorted(gate.tools))
                    continue
                out.append(gate)
        return out

