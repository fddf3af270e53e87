"""Skill-specific refinements of :class:`~pocketpilot.errors.ContractError`.

``except ContractError`` still catches them::

    ContractError (ValueError)
    └── SkillError                 a SKILL.md that does not parse or does not fit the format
        └── UnknownSkillError (KeyError)   a skill name the library does not hold
"""

from __future__ import annotations

from ..errors import ContractError

__all__ = ["SkillError", "UnknownSkillError"]


class SkillError(ContractError):
    """A skill file that cannot be used, naming the file and the field at fault.

    Attributes:
        source: the SKILL.md path (or another label of where the skill came from).
        field: the front-matter field at fault, dotted with list indices
            (``preconditions[1].needs``); ``""`` when the whole file is at fault.
        reason: what is wrong, in words.
    """

    def __init__(self, source: str, field: str, reason: str) -> None:
        where = f"{source}: {field}" if field else source
        super().__init__(f"invalid skill {where}: {reason}")
        self.source, self.field, self.reason = source, field, reason


class UnknownSkillError(SkillError, KeyError):
    """The library holds no skill of that name."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__("<library>", "name", f"no skill named {name!r}; known: {', '.join(known) or 'none'}")
        self.name, self.known = name, known

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])
