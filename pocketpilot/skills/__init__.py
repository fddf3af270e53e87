"""Skills: procedural guidance in ``SKILL.md`` folders, with preconditions enforced as hard gates.

Public API::

    from pocketpilot.skills import SkillLibrary
    library = SkillLibrary.builtin()               # the shipped skills (sandbox apps + arbiter)
    library.available(exposed_tool_names)          # SkillStore: loadable skill names
    library.load("screen-cast")                    # -> LoadedSkill(guidance, exposes, gates)
    library.always_on_gates(exposed_tool_names)    # gates enforced without loading
    Session(..., skills=library, gates=library.always_on_gates(names))

A skill applies through the tools of the world it declares (``world: sandbox`` for the shipped
library), never through a namesake of another world: pass the tools' specs, or a library bound
to them (``library.bind(executor.tools())``), wherever tools may come from another world (see
:mod:`pocketpilot.skills.worlds`).

See :mod:`pocketpilot.skills.skill` for the SKILL.md format and
:mod:`pocketpilot.skills.preconditions` for the precondition vocabulary.
"""

from __future__ import annotations

from .audit import Violation, audit_episode
from .errors import SkillError, UnknownSkillError
from .gates import (
    DependsOnResultGate,
    PreconditionGate,
    QueryBeforeToggleGate,
    RequiresPriorSuccessGate,
    StopBeforeStartGate,
    executed_calls,
)
from .library import SkillLibrary, builtin_library_path
from .preconditions import (
    PRECONDITION_KINDS,
    DependsOnResult,
    Precondition,
    QueryBeforeToggle,
    RequiresPriorSuccess,
    StopBeforeStart,
)
from .skill import LoadedSkill, Skill, SkillMeta, parse_skill, read_skill
from .worlds import ToolSet

__all__ = [
    "PRECONDITION_KINDS",
    "DependsOnResult",
    "DependsOnResultGate",
    "LoadedSkill",
    "Precondition",
    "PreconditionGate",
    "QueryBeforeToggle",
    "QueryBeforeToggleGate",
    "RequiresPriorSuccess",
    "RequiresPriorSuccessGate",
    "Skill",
    "SkillError",
    "SkillLibrary",
    "SkillMeta",
    "StopBeforeStart",
    "StopBeforeStartGate",
    "ToolSet",
    "UnknownSkillError",
    "Violation",
    "audit_episode",
    "builtin_library_path",
    "executed_calls",
    "parse_skill",
    "read_skill",
]
