"""Candidate revisions of η: rule-checked, applied to produce a new version, approved by a human.

Offline diagnosis proposes revisions (add or change a routing note, map a tool to a skill,
set a harness policy's parameters, add or remove a policy that is not a safety one);
nothing proposed takes effect until approved. Skills themselves are revised in their SKILL.md
files, not here: a revision cannot weaken a declared precondition.

Store layout, beside the η file ``eta.json``::

    eta.json                         the approved, current η
    eta.json.revisions/pending/<id>.json
    eta.json.revisions/approved/<id>.json   the revision + base and resulting versions
    eta.json.revisions/history/<version>.json   every η that was current once
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..contracts import utcnow
from ..policy_registry import PolicyError, build, registered
from ..skills.worlds import ToolSet
from .compile import note_for_tools
from .errors import EtaError, RevisionError
from .eta import Eta, PolicyEntry, RoutingNote, load_eta, save_eta
from .experience import ExperienceConfig, ExperienceEntry, forget, merge
from .placement import MemorySettings
from .tool_retrieval import ToolRetrievalSettings

__all__ = [
    "AddExperience", "AddNote", "EvictExperience", "MapTool", "RemoveNote", "RemovePolicy", "ReplaceNote", "Revision",
    "RevisionStore", "SetExperienceConfig", "SetMemory", "SetOffer", "SetToolRetrieval", "SetToolText",
    "SetPolicy", "SetStopWords",
    "apply_revision",
]


class _Op(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def _apply(self, draft: _Draft, i: int) -> None:
        """Change ``draft`` as this op says, after its rule checks (``i``: its place in the revision)."""
        raise NotImplementedError


class AddNote(_Op):
    """Add a routing note (appended after the existing ones)."""

    op: Literal["add_note"] = "add_note"
    note: RoutingNote

    def _apply(self, draft: _Draft, i: int) -> None:
        if self.note.id in draft.note_ids:
            raise draft.fail(i, f"note {self.note.id!r} already exists (use replace_note)")
        draft.notes.append(_check_note(draft.eta, self.note, draft.rev))


class ReplaceNote(_Op):
    """Replace the note with the same id."""

    op: Literal["replace_note"] = "replace_note"
    note: RoutingNote

    def _apply(self, draft: _Draft, i: int) -> None:
        ids = draft.note_ids
        if self.note.id not in ids:
            raise draft.fail(i, f"no note {self.note.id!r} to replace")
        draft.notes[ids.index(self.note.id)] = _check_note(draft.eta, self.note, draft.rev)


class RemoveNote(_Op):
    """Remove a note by id."""

    op: Literal["remove_note"] = "remove_note"
    note_id: str

    def _apply(self, draft: _Draft, i: int) -> None:
        ids = draft.note_ids
        if self.note_id not in ids:
            raise draft.fail(i, f"no note {self.note_id!r} to remove")
        draft.notes.pop(ids.index(self.note_id))


class MapTool(_Op):
    """Add (or, with ``remove``, drop) a skill in a tool's tool→skill mapping."""

    op: Literal["map_tool"] = "map_tool"
    tool: str
    skill: str
    remove: bool = False

    def _apply(self, draft: _Draft, i: int) -> None:
        tools, skills_of = draft.tools, draft.eta.skills
        if self.tool not in tools:
            raise draft.fail(i, f"unknown tool {self.tool!r}")
        if self.skill not in skills_of:
            raise draft.fail(i, f"unknown skill {self.skill!r}")
        if not self.remove and tools[self.tool].world != skills_of[self.skill].world:
            raise draft.fail(i, f"skill {self.skill!r} is for world {skills_of[self.skill].world or 'undeclared'}, "
                                f"tool {self.tool!r} is of {tools[self.tool].world or 'none declared'}")
        skills = [s for s in tools[self.tool].skills if s != self.skill]
        if not self.remove:
            skills = sorted([*skills, self.skill])
        tools[self.tool] = tools[self.tool].model_copy(update={"skills": skills})


class SetPolicy(_Op):
    """Set a policy's parameters (adding it at the end, before confirmation, when absent)."""

    op: Literal["set_policy"] = "set_policy"
    policy: PolicyEntry

    def _apply(self, draft: _Draft, i: int) -> None:
        _check_policy(self.policy, draft.rev, i)
        names = draft.policy_names
        if self.policy.name in names:
            draft.policies[names.index(self.policy.name)] = self.policy
        else:
            at = names.index("confirmation") if "confirmation" in names else len(names)
            draft.policies.insert(at, self.policy)


class RemovePolicy(_Op):
    """Leave a policy out. Safety policies (gates, confirmation) cannot be removed."""

    op: Literal["remove_policy"] = "remove_policy"
    name: str

    def _apply(self, draft: _Draft, i: int) -> None:
        names = draft.policy_names
        if self.name not in names:
            raise draft.fail(i, f"no policy {self.name!r} to remove")
        if registered()[self.name].safety:
            raise draft.fail(i, f"{self.name!r} is a safety policy and cannot be removed")
        draft.policies.pop(names.index(self.name))


class SetOffer(_Op):
    """Offer an action kind only on requests matching ``pattern`` (None: on every request)."""

    op: Literal["set_offer"] = "set_offer"
    kind: str
    pattern: str | None = None

    def _apply(self, draft: _Draft, i: int) -> None:
        if self.pattern is None:
            draft.offers.pop(self.kind, None)
        else:
            draft.offers[self.kind] = self.pattern


class SetStopWords(_Op):
    """Add and remove words skill routing ignores (another language, another app's filler words)."""

    op: Literal["set_stop_words"] = "set_stop_words"
    add: list[str] = Field(default_factory=list)
    remove: list[str] = Field(default_factory=list)

    def _apply(self, draft: _Draft, i: int) -> None:
        draft.stop_words = ((draft.stop_words | {w.strip().lower() for w in self.add})
                            - {w.strip().lower() for w in self.remove})


class AddExperience(_Op):
    """Add workflows to the experience library (a near-duplicate of one there merges into it)."""

    op: Literal["add_experience"] = "add_experience"
    entries: list[ExperienceEntry] = Field(min_length=1)

    def _apply(self, draft: _Draft, i: int) -> None:
        unknown = sorted({t for e in self.entries for t in e.tools if t not in draft.tools})
        if unknown:
            raise draft.fail(i, f"experience calls unknown tool(s): {', '.join(unknown)}")
        draft.experience = merge(draft.experience, self.entries)


class EvictExperience(_Op):
    """Evict an entry that measured as harmful (or quotes a deleted memory), by id."""

    op: Literal["evict_experience"] = "evict_experience"
    entry_id: str

    def _apply(self, draft: _Draft, i: int) -> None:
        if self.entry_id not in [e.id for e in draft.experience]:
            raise draft.fail(i, f"no experience entry {self.entry_id!r} to evict")
        draft.experience = [e for e in draft.experience if e.id != self.entry_id]


class SetExperienceConfig(_Op):
    """Switch the worked examples on or off, or change how many are shown and their budget."""

    op: Literal["set_experience_config"] = "set_experience_config"
    config: ExperienceConfig

    def _apply(self, draft: _Draft, i: int) -> None:
        draft.experience_config = self.config


class SetToolText(_Op):
    """Show a rewritten description of a tool (allowed values, an example call); None: its own again.

    The text is η's: the tool's code and its declared schema are untouched.
    """

    op: Literal["set_tool_text"] = "set_tool_text"
    tool: str
    description: str | None = Field(default=None, min_length=1, max_length=1000)

    def _apply(self, draft: _Draft, i: int) -> None:
        if self.tool not in draft.tools:
            raise draft.fail(i, f"unknown tool {self.tool!r}")
        draft.tools[self.tool] = draft.tools[self.tool].model_copy(update={"revised_description": self.description})


class SetToolRetrieval(_Op):
    """Change tool exposure by retrieval: how many tools a step shows (None: every tool, retrieval off)."""

    op: Literal["set_tool_retrieval"] = "set_tool_retrieval"
    settings: ToolRetrievalSettings | None = None

    def _apply(self, draft: _Draft, i: int) -> None:
        draft.tool_retrieval = self.settings


class SetMemory(_Op):
    """Set η's memory section: recall, placement and answer-path switches (None: the harness's defaults)."""

    op: Literal["set_memory"] = "set_memory"
    settings: MemorySettings | None = None

    def _apply(self, draft: _Draft, i: int) -> None:
        draft.memory = self.settings


Op = Annotated[AddNote | ReplaceNote | RemoveNote | MapTool | SetPolicy | RemovePolicy | SetOffer | SetStopWords
               | AddExperience | EvictExperience | SetExperienceConfig | SetToolText | SetToolRetrieval | SetMemory,
               Field(discriminator="op")]


class Revision(BaseModel):
    """A candidate change to one η version."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    base_version: str
    rationale: str = Field(min_length=1, max_length=1000)
    ops: list[Op] = Field(min_length=1)
    source: str = "diagnosis"


def _check_note(eta: Eta, note: RoutingNote, rev: Revision) -> RoutingNote:
    """``note`` as it goes into η (stating the world of η's tools it requires), once checked."""
    unknown = [t for t in note.requires_tools if t not in eta.tools]
    if unknown:
        raise RevisionError(rev.id, f"note {note.id!r} requires unknown tool(s): {', '.join(unknown)}")
    note = note_for_tools(note, ToolSet({name: entry.world for name, entry in eta.tools.items()}))
    foreign = [t for t in note.requires_tools if eta.tools[t].world != note.world]
    if foreign:  # a note speaks about its world's tools, never about a namesake
        raise RevisionError(rev.id, f"note {note.id!r} is for world {note.world or 'undeclared'}; "
                                    f"of another world: {', '.join(foreign)}")
    strangers = [n for n in note.covered_by if n not in eta.skills]
    if strangers:
        names = ", ".join(strangers)
        raise RevisionError(rev.id, f"note {note.id!r} is covered by unknown skill(s): {names}")
    return note


def _check_policy(entry: PolicyEntry, rev: Revision, i: int) -> None:
    """The parameters must be ones the policy takes (it is built once to prove it)."""
    try:
        build([entry.model_dump(mode="json")])
    except PolicyError as exc:
        raise RevisionError(rev.id, f"ops[{i}]: {exc}") from exc


class _Draft:
    """The sections of η a revision's ops change, copied from the base η, changed op by op.

    Each op class applies itself (``_apply``): one method per op, so a new op is one class and
    its method, and :func:`apply_revision` never grows a branch.
    """

    def __init__(self, eta: Eta, rev: Revision) -> None:
        self.eta, self.rev = eta, rev
        self.notes = list(eta.notes)
        self.tools = dict(eta.tools)
        self.policies = list(eta.policies)
        self.offers = dict(eta.offers)
        self.stop_words = set(eta.stop_words)
        self.experience = list(eta.experience)
        self.experience_config = eta.experience_config
        self.tool_retrieval = eta.tool_retrieval
        self.memory = eta.memory

    def fail(self, i: int, reason: str) -> RevisionError:
        """The error for ``ops[i]`` failing a rule (raised by the caller)."""
        return RevisionError(self.rev.id, f"ops[{i}]: {reason}")

    @property
    def note_ids(self) -> list[str]:
        return [n.id for n in self.notes]

    @property
    def policy_names(self) -> list[str]:
        return [p.name for p in self.policies]

    def build(self) -> Eta:
        """The new η: the changed sections over the base's.

        Every other section of η (one a later feature adds included) carries over as it was.
        """
        kept = {name: getattr(self.eta, name) for name in Eta.model_fields}
        return Eta(**{**kept, "tools": self.tools, "notes": self.notes, "policies": self.policies,
                      "offers": self.offers, "stop_words": sorted(self.stop_words), "experience": self.experience,
                      "experience_config": self.experience_config, "tool_retrieval": self.tool_retrieval,
                      "memory": self.memory})


def apply_revision(eta: Eta, rev: Revision) -> Eta:
    """Apply ``rev`` to ``eta`` and return the new η, after its rule checks.

    Rules: the revision is based on exactly this version; note ids are added only when new and
    replaced/removed only when present; notes and mappings name known tools and skills; the
    result differs from the base.

    Raises:
        RevisionError: a rule failed; ``eta`` is untouched.
    """
    if rev.base_version != eta.version:
        raise RevisionError(rev.id, f"based on η {rev.base_version}, but the current η is {eta.version}")
    draft = _Draft(eta, rev)
    for i, op in enumerate(rev.ops):
        op._apply(draft, i)
    new = draft.build()
    if new.version == eta.version:
        raise RevisionError(rev.id, "the revision changes nothing")
    return new


def _write_json(path: Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, sort_keys=True, indent=1, ensure_ascii=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RevisionStore:
    """Pending and approved revisions stored beside an η file.

    Args:
        eta_path: the η file the revisions apply to (the current, approved η).
    """

    def __init__(self, eta_path: str | os.PathLike[str]) -> None:
        self.eta_path = Path(eta_path)
        self.root = self.eta_path.with_name(self.eta_path.name + ".revisions")

    def _pending_path(self, rev_id: str) -> Path:
        return self.root / "pending" / f"{rev_id}.json"

    def propose(self, rev: Revision) -> Path:
        """Check ``rev`` against the current η (dry run) and store it as pending.

        Raises:
            RevisionError: it fails a rule, or a revision with that id exists.
        """
        apply_revision(load_eta(self.eta_path), rev)
        path = self._pending_path(rev.id)
        if path.exists() or (self.root / "approved" / f"{rev.id}.json").exists():
            raise RevisionError(rev.id, "a revision with this id already exists")
        _write_json(path, rev.model_dump(mode="json"))
        return path

    def pending(self) -> list[Revision]:
        """Revisions awaiting approval, by id."""
        folder = self.root / "pending"
        return [self._read(p) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []

    def _read(self, path: Path) -> Revision:
        try:
            return Revision.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError) as exc:
            raise EtaError(str(path), f"not a readable revision: {exc}") from exc

    def approve(self, rev_id: str, approver: str) -> Eta:
        """Apply a pending revision to the current η, make the result current, record the approval.

        The previous η is kept under ``history/``; the η file is replaced atomically.

        Raises:
            RevisionError: no such pending revision, or it no longer applies (stale base).
        """
        path = self._pending_path(rev_id)
        if not path.exists():
            raise RevisionError(rev_id, "no pending revision with this id")
        if not approver.strip():
            raise RevisionError(rev_id, "an approval needs the approver's name")
        current = load_eta(self.eta_path)
        rev = self._read(path)
        new = apply_revision(current, rev)
        save_eta(current, self.root / "history" / f"{current.version}.json")
        save_eta(new, self.eta_path)
        record = {
            "revision": rev.model_dump(mode="json"),
            "approved_by": approver,
            "approved_at": utcnow().isoformat(),
            "base_version": current.version,
            "new_version": new.version,
        }
        _write_json(self.root / "approved" / f"{rev_id}.json", record)
        path.unlink()
        return new

    def forget(self, ledger: object) -> list[str]:
        """Remove every experience entry a deleted memory survives in, from every η and revision stored here.

        Deletion needs no approval: the current η, every η kept under ``history/``, and the
        entries of pending and approved ``add_experience`` revisions are rewritten without the
        entries :func:`~pocketpilot.adapters.experience.forget` drops (by the ids of the
        memories their runs were shown, and by quotes of deleted text). A pending revision left
        with nothing to add is removed. What was dropped is recorded, by entry id only, under
        ``forgotten/``.

        Args:
            ledger: the memory stores' :class:`~pocketpilot.memory.ledger.DeletionLedger`.

        Returns:
            The ids of the entries dropped (empty: nothing held a deleted memory).
        """
        dropped: set[str] = set()
        paths = [self.eta_path, *sorted((self.root / "history").glob("*.json"))]
        before = load_eta(self.eta_path).version if self.eta_path.exists() else None
        for path in paths:
            if not path.exists():
                continue
            eta = load_eta(path)
            kept, gone = forget(eta.experience, ledger)
            if gone:
                dropped.update(gone)
                save_eta(eta.model_copy(update={"experience": kept}), path)
        for folder in ("pending", "approved"):
            for path in sorted((self.root / folder).glob("*.json")) if (self.root / folder).is_dir() else []:
                dropped.update(self._scrub(path, ledger, folder == "pending"))
        if dropped:
            after = load_eta(self.eta_path).version if self.eta_path.exists() else None
            _write_json(self.root / "forgotten" / f"{utcnow().strftime('%Y%m%dT%H%M%S%f')}.json",
                        {"entries": sorted(dropped), "base_version": before, "new_version": after,
                         "at": utcnow().isoformat()})
        return sorted(dropped)

    def _scrub(self, path: Path, ledger: object, pending: bool) -> set[str]:
        raw = json.loads(path.read_text(encoding="utf-8"))
        rev = raw.get("revision", raw)
        gone: set[str] = set()
        ops = []
        for op in rev.get("ops", []):
            if op.get("op") == "add_experience":
                entries = [ExperienceEntry.model_validate(e) for e in op.get("entries", [])]
                kept, dropped = forget(entries, ledger)
                gone.update(dropped)
                if not kept:
                    continue
                op = {**op, "entries": [e.model_dump(mode="json") for e in kept]}
            ops.append(op)
        if not gone:
            return gone
        if pending and not ops:
            path.unlink()
            return gone
        rev["ops"] = ops
        _write_json(path, raw)
        return gone
