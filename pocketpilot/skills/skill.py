"""One skill: a folder with a ``SKILL.md`` (YAML front matter + a markdown procedure).

Format::

    ---
    name: note-before-power-off        # the folder name; lowercase, digits, dashes
    description: Save what the user wants kept before the phone goes off.
    version: "1.0"
    world: sandbox                     # the world whose tools it names (omitted: undeclared)
    requires: [create_note, power_off] # available only when all of these are exposed
    exposes: [read_note]               # tools made visible to the planner once loaded
    keywords: [note, write down]       # words of requests that need it (request routing)
    preconditions:                     # hard gates; see pocketpilot.skills.preconditions
      - requires_prior_success: {tool: power_off, needs: create_note, with_result_field: id}
    ---
    1. Save the note with create_note and wait for its id.
    2. Only then call power_off.

Every problem raises :class:`~pocketpilot.skills.errors.SkillError` naming the file and the
field (``preconditions[0].needs``), so a broken skill is fixed in one look.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .base import ToolGate
from .errors import SkillError
from .gates import PreconditionGate
from .preconditions import Precondition, normalize_precondition

__all__ = ["LoadedSkill", "Skill", "SkillMeta", "parse_skill", "read_skill"]

SKILL_FILE = "SKILL.md"
_NAME = r"^[a-z0-9][a-z0-9-]{0,63}$"
_TOOL = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
MAX_BODY_CHARS = 2400
"""A procedure longer than this would crowd the guidance budget of the context."""


class SkillMeta(BaseModel):
    """The front matter of a SKILL.md."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=_NAME)
    description: str = Field(min_length=1, max_length=300)
    version: str = Field(min_length=1, max_length=20)
    world: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    """The world whose tools the skill names (``ToolSpec.world``; ``sandbox`` for the bundled
    library). It applies only through tools that declare that world: a tool of another world
    with a matching name is not the tool the procedure and the preconditions speak about (see
    :mod:`pocketpilot.skills.worlds`). None: undeclared, for tools that declare no world."""
    requires: list[str] = Field(default_factory=list)
    exposes: list[str] = Field(default_factory=list)
    preconditions: list[Precondition] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list, max_length=40)
    """Words a request uses when it needs this skill (the user's words, e.g. "yards" for unit
    conversion); the Scenario Adapter's router matches requests against them besides the
    description and the tool names."""

    @field_validator("keywords")
    @classmethod
    def _keywords(cls, value: list[str]) -> list[str]:
        for word in value:
            if not word.strip() or len(word) > 40:
                raise ValueError(f"{word!r} is not a keyword (1-40 characters)")
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        # YAML reads `version: 1.0` as a float; the version is a label, not a number.
        return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value

    @field_validator("requires", "exposes")
    @classmethod
    def _tool_names(cls, value: list[str]) -> list[str]:
        import re

        for name in value:
            if not re.match(_TOOL, name):
                raise ValueError(f"{name!r} is not a tool name")
        if len(set(value)) != len(value):
            raise ValueError("lists a tool twice")
        return value

    @field_validator("preconditions", mode="before")
    @classmethod
    def _short_forms(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [normalize_precondition(item) for item in value]
        return value


@dataclass(frozen=True)
class LoadedSkill:
    """What the harness applies when a skill is loaded (see ``Session._load_skill``).

    Attributes:
        name: the skill's name.
        guidance: the procedure shown to the planner for the rest of the session.
        exposes: tools the skill makes visible.
        gates: every gate the skill declares (``always`` ones are also on without loading).
    """

    name: str
    guidance: str
    exposes: list[str]
    gates: list[ToolGate]


@dataclass(frozen=True)
class Skill:
    """A parsed skill: front matter, procedure, where it came from and a content digest."""

    meta: SkillMeta
    body: str
    source: str
    sha256: str
    gates: tuple[PreconditionGate, ...] = field(default=(), repr=False)

    @property
    def name(self) -> str:
        """The skill's name."""
        return self.meta.name

    @property
    def world(self) -> str | None:
        """The world whose tools the skill names (None: undeclared)."""
        return self.meta.world

    @property
    def governs(self) -> frozenset[str]:
        """Tools this skill speaks about: required, exposed, or named by a precondition."""
        names = set(self.meta.requires) | set(self.meta.exposes)
        for pre in self.meta.preconditions:
            names |= pre.tools_referenced()
        return frozenset(names)

    def guidance(self) -> str:
        """The text the planner sees once the skill is loaded: the procedure.

        Not the description: that is routing and index text, and shown above a procedure a
        small planner read it as a to-do list ("Change Wi-Fi, Bluetooth, do-not-disturb,
        brightness or ring mode" was followed by set_wifi, set_bluetooth, … after the one
        change the user asked for, in the traces). A skill without a body
        falls back to its description.
        """
        return self.body.strip() or self.meta.description

    def load(self) -> LoadedSkill:
        """The loaded form the harness applies."""
        return LoadedSkill(
            name=self.name, guidance=self.guidance(), exposes=list(self.meta.exposes), gates=list(self.gates)
        )


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("requires_prior_success", "query_before_toggle", "stop_before_start", "depends_on_result"):
            continue  # the discriminator tag pydantic inserts; the user wrote no such key
        else:
            out += f".{part}" if out else str(part)
    return out


def parse_skill(text: str, source: str, *, folder: str | None = None) -> Skill:
    """Parse the text of a SKILL.md.

    Args:
        text: the file's content.
        source: where it came from (a path), named in errors.
        folder: the folder name the skill lives in; when given, ``name`` must equal it.

    Raises:
        SkillError: missing or malformed front matter, a bad field, an empty procedure.
    """
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillError(source, "", "must start with a '---' line opening the YAML front matter")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise SkillError(source, "", "front matter is not closed by a '---' line") from None
    try:
        raw = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise SkillError(source, "", f"front matter is not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise SkillError(source, "", "front matter must be a mapping of fields")
    try:
        meta = SkillMeta.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field_name = _loc(err["loc"]) or "front matter"
        extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise SkillError(source, field_name, f"{err['msg']}{extra}") from exc
    except ValueError as exc:  # normalize_precondition on a short form
        raise SkillError(source, "preconditions", str(exc)) from exc
    if folder is not None and meta.name != folder:
        raise SkillError(source, "name", f"{meta.name!r} must equal its folder name {folder!r}")
    body = "\n".join(lines[end + 1 :]).strip()
    if not body:
        raise SkillError(source, "body", "the procedure (markdown after the front matter) is empty")
    if len(body) > MAX_BODY_CHARS:
        raise SkillError(source, "body", f"procedure has {len(body)} characters; keep it under {MAX_BODY_CHARS}")
    gates = tuple(pre.compile(meta.name) for pre in meta.preconditions)
    digest = hashlib.sha256(text.encode()).hexdigest()
    return Skill(meta=meta, body=body, source=source, sha256=digest, gates=gates)


def read_skill(folder: str | Path) -> Skill:
    """Read ``folder/SKILL.md``.

    Raises:
        SkillError: the file is missing, unreadable, not UTF-8, or invalid.
    """
    path = Path(folder) / SKILL_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise SkillError(str(path), "", "no SKILL.md in the skill folder") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillError(str(path), "", f"cannot read: {exc}") from exc
    return parse_skill(text, str(path), folder=Path(folder).name)
