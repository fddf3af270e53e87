"""The versioned harness configuration η: what the Scenario Adapter compiles and the harness runs under.

η holds the tool schemas, the tool→skill mapping, the skills' declared contracts and the
routing notes. Its version is a content hash: the first 16 hex digits of the sha256 of its
canonical JSON (sorted keys, no whitespace), so equal content always has an equal version and
any change, however small, a new one. Every trace records the version it ran under
(``EpisodeHeader.eta_version``).

The file form is ``{"eta_version": ..., "eta": {...}}`` with sorted keys; :func:`load_eta`
recomputes the hash and refuses a file whose content no longer matches its version.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from ..policy_registry import PolicyError, build, default_entries, registered
from ._content import OmitAtDefault, omit_defaults
from .defaults import DEFAULT_OFFERS, DEFAULT_STOP_WORDS
from .delegation import DelegationSettings
from .errors import EtaError, EtaIntegrityError
from .experience import ExperienceConfig, ExperienceEntry
from .placement import MemorySettings
from .tool_retrieval import ToolRetrievalSettings

__all__ = [
    "Eta", "ExperienceConfig", "ExperienceEntry", "PolicyEntry", "RoutingNote", "SkillEntry", "ToolEntry",
    "canonical_json", "default_policy_entries",
    "load_eta", "save_eta",
]

VERSION_CHARS = 16


def canonical_json(obj: Any) -> str:
    """The canonical text of a JSON value: sorted keys, no whitespace, UTF-8 as is."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolEntry(_Model):
    """One tool as the harness exposes it, with the skills that govern it."""

    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)
    destructive: bool = False
    semantics: dict[str, Any] = Field(default_factory=dict)
    """The tool's declared semantics (``ToolSpec.semantics()``): a change to them is a change of η."""
    app: str | None = None
    """The app the tool belongs to, when known (a GUI sub-agent is confined to one app's tools)."""
    world: Annotated[str | None, OmitAtDefault()] = None
    """The world the tool declares (``ToolSpec.world``): the tool η's skills and notes mean by its name."""
    skills: list[str] = Field(default_factory=list)
    revised_description: Annotated[str | None, OmitAtDefault()] = Field(default=None, min_length=1, max_length=1000)
    """A reviewed rewrite of the description (allowed values, an example call) shown in place of
    the tool's own; the app's code is untouched. None: the tool's own description."""


class SkillEntry(_Model):
    """A skill's declared contract, as compiled into η (the procedure text stays in SKILL.md)."""

    version: str
    description: str
    world: Annotated[str | None, OmitAtDefault()] = None
    """The world whose tools the skill names (``SkillMeta.world``)."""
    requires: list[str] = Field(default_factory=list)
    exposes: list[str] = Field(default_factory=list)
    preconditions: list[dict[str, Any]] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    """Request words that route to the skill (see :mod:`pocketpilot.adapters.route`)."""
    sha256: str
    """Digest of the SKILL.md the entry was compiled from."""


class RoutingNote(_Model):
    """One entry of adapter guidance, shown only when what it needs is available.

    Attributes:
        id: stable identifier (diffs and revisions refer to it).
        text: the guidance line shown to the planner.
        requires_tools: every one must be exposed in the step.
        requires_resources: every one must be configured (``memory``, ``recall``, ``skills``,
            ``delegate``).
        when_request: a regular expression (case-insensitive); when set, the note applies only
            to requests it matches (guidance for a kind of request, not for every request).
        covered_by: skills whose procedure says the same; the note is left out while one of
            them is shown (the same advice twice only lengthens the prompt).
        world: the world the note was written for (``ToolSpec.world``); it applies only to a
            session with tools of that world, its required tools as that world's (a namesake
            of another world is not the tool it speaks about). None: a note about the harness
            itself (memory, skills, delegation), for any world.
    """

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    text: str = Field(min_length=1, max_length=400)
    requires_tools: list[str] = Field(default_factory=list)
    requires_resources: list[str] = Field(default_factory=list)
    when_request: str | None = Field(default=None, min_length=1, max_length=200)
    covered_by: list[str] = Field(default_factory=list)
    world: Annotated[str | None, OmitAtDefault()] = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")

    @field_validator("when_request")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"when_request is not a regular expression: {exc}") from exc
        return value


class PolicyEntry(_Model):
    """One harness policy η runs under, by its registry name, with its parameters."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in registered():
            raise ValueError(f"unknown policy {value!r}; known: {', '.join(registered())}")
        return value


def default_policy_entries() -> list[PolicyEntry]:
    """The harness's default policy set, as η records it."""
    return [PolicyEntry.model_validate(e) for e in default_entries()]


def _default_offers() -> dict[str, str]:
    return dict(DEFAULT_OFFERS)


def _default_stop_words() -> list[str]:
    return sorted(set(DEFAULT_STOP_WORDS))  # the validated form: defaults are not validated


class Eta(_Model):
    """The harness configuration η (content only; the version is derived from it)."""

    format: Literal[1] = 1
    tools: dict[str, ToolEntry] = Field(default_factory=dict)
    skills: dict[str, SkillEntry] = Field(default_factory=dict)
    notes: list[RoutingNote] = Field(default_factory=list)
    policies: list[PolicyEntry] = Field(default_factory=default_policy_entries)
    """The harness policies, in order: a reviewed revision may change one or its parameters."""
    memory: Annotated[MemorySettings | None, OmitAtDefault()] = None
    """Recall, memory placement and answer-path switches (:mod:`.placement`); None: the harness's defaults."""
    tool_retrieval: Annotated[ToolRetrievalSettings | None, OmitAtDefault()] = None
    """Tool exposure by retrieval (:mod:`.tool_retrieval`: at most ``k`` tools per step); None: off, every tool shown."""
    delegation: Annotated[DelegationSettings | None, OmitAtDefault()] = None
    """How the harness briefs a sub-agent (:mod:`.delegation`); None: as before, every switch off."""
    offers: dict[str, str] = Field(default_factory=_default_offers)
    """Action kinds offered only when the request matches a pattern (``memory_write``, ``delegate``)."""
    stop_words: list[str] = Field(default_factory=_default_stop_words)
    """Words skill routing ignores (the request's language is data, not code)."""
    experience: Annotated[list[ExperienceEntry], OmitAtDefault()] = Field(default_factory=list)
    """Workflows distilled from verified runs, shown as worked examples (:mod:`.experience`)."""
    experience_config: ExperienceConfig = Field(default_factory=ExperienceConfig)
    """The switch and budget of the worked examples."""

    @field_validator("offers")
    @classmethod
    def _offers(cls, value: dict[str, str]) -> dict[str, str]:
        from ..contracts import ACTION_KINDS

        for kind, pattern in value.items():
            if kind not in ACTION_KINDS:
                raise ValueError(f"offers names an unknown action kind {kind!r}")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"offers[{kind!r}] is not a regular expression: {exc}") from exc
        return value

    @field_validator("stop_words")
    @classmethod
    def _stop_words(cls, value: list[str]) -> list[str]:
        words = sorted({w.strip().lower() for w in value} - {""})
        bad = [w for w in words if not re.fullmatch(r"[^\s]+", w)]
        if bad:
            raise ValueError(f"stop_words holds words with spaces: {bad[:3]}")
        return words

    _dropped: dict[str, list[str]] = PrivateAttr(default_factory=dict)

    @property
    def dropped(self) -> dict[str, list[str]]:
        """Skills and notes left out at compile time because they name tools this world lacks."""
        return self._dropped

    def content(self) -> dict[str, Any]:
        """The JSON content the version hashes.

        A key added to η's models after η files were written is declared ``OmitAtDefault`` on
        its own field (:mod:`._content`): it is left out while it holds its default (a section
        never written, a switch added off, an undeclared ``world``, a description never
        revised), so η content that does not use it hashes, and is stored, exactly as before
        the key existed.
        """
        data = omit_defaults(self, self.model_dump(mode="json"))
        # the experience library's settings came with it: an η without experience and with
        # default settings hashes and is stored as before the library existed
        if "experience" not in data and self.experience_config == ExperienceConfig():
            del data["experience_config"]
        return data

    @property
    def version(self) -> str:
        """Content hash: 16 hex digits of the sha256 of the canonical JSON.

        Recomputed on each access (about 1-3 ms for the sandbox's 37 tools), never cached:
        ``model_copy(update=...)`` would carry a cached hash over to changed content.
        """
        return hashlib.sha256(canonical_json(self.content()).encode()).hexdigest()[:VERSION_CHARS]

    def build_policies(self) -> list[Any]:
        """Fresh policy objects for one session (built by :mod:`pocketpilot.policy_registry`).

        Raises:
            EtaError: a policy's parameters are not ones it takes.
        """
        try:
            return build([p.model_dump(mode="json") for p in self.policies])
        except PolicyError as exc:
            raise EtaError(f"eta {self.version}", str(exc)) from exc

    def note(self, note_id: str) -> RoutingNote | None:
        """The note with that id, if any."""
        return next((n for n in self.notes if n.id == note_id), None)

    def app_tools(self, app: str) -> list[str]:
        """Names of the tools of one app: the tool list of a sub-agent confined to it."""
        return [name for name, entry in self.tools.items() if entry.app == app]

    def to_file_json(self) -> str:
        """The text stored on disk (sorted keys, indented for reading and line diffs)."""
        text = json.dumps({"eta_version": self.version, "eta": self.content()}, sort_keys=True, indent=1, ensure_ascii=False)
        return text + "\n"


def save_eta(eta: Eta, path: str | os.PathLike[str]) -> Path:
    """Write η atomically (temp file in the same folder, fsync, rename): a crash never leaves half a file.

    Raises:
        EtaError: the folder cannot be written.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(eta.to_file_json())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise EtaError(str(target), f"cannot write: {exc}") from exc
    return target


def load_eta(path: str | os.PathLike[str]) -> Eta:
    """Read and verify an η file.

    Raises:
        EtaError: missing, unreadable, not JSON, or not an η.
        EtaIntegrityError: the content does not hash to the recorded version.
    """
    source = str(path)
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise EtaError(source, "no such η file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise EtaError(source, f"cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise EtaError(source, f"not JSON: {exc}") from exc
    if not isinstance(raw, dict) or "eta" not in raw or "eta_version" not in raw:
        raise EtaError(source, "not an η file (expected keys eta_version and eta)")
    try:
        eta = Eta.model_validate(raw["eta"])
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise EtaError(source, f"invalid η at {where}: {err['msg']}") from exc
    if eta.version != raw["eta_version"]:
        raise EtaIntegrityError(
            source, f"content hashes to {eta.version}, but the file says {raw['eta_version']}: recompile it"
        )
    return eta
