"""The co-evolution loop's state: everything lives in its output folder, so a run resumes anywhere.

Layout of ``OUT``::

    .lock                         held by the run working in the folder (:mod:`.folder_lock`)
    evolve.json                   the settings the folder was started with (schema, task folder, samples, seed)
    eta.json                      the current, approved η
    eta.json.revisions/           pending / approved / history (:class:`~pocketpilot.adapters.RevisionStore`)
    iter-01/start.json            the η version and the dev and evolve task ids of the iteration
    iter-01/eta.json              the η the iteration runs under (a snapshot: approvals elsewhere never change it)
    iter-01/dev/outcomes.jsonl    one line per finished dev episode (traces under dev/traces/)
    iter-01/proposals.json        the candidates proposed from the dev episodes (and the previous evolve successes)
    iter-01/evolve/<label>/outcomes.jsonl   the evolve sample under the current η (base), each candidate, the set
    iter-01/harm.json             experience entries shown in failed evolve tasks, the harm attributed, evictions
    iter-01/evolve/no-experience/ the failed evolve tasks shown experience, run again with it off (paired harm)
    iter-01/decision.json         the paired measurements, what was accepted and the revision written
    iter-01/review.json           what became of that revision (approved, rejected, nothing to review)
    decode-memo.jsonl             the decode memo (created empty when the memo is on; absent with --no-decode-memo)
    report.md                     the per-iteration table, and the planner steps the memo served per run set

Each file is written once, atomically, when its step is done; episodes are appended as they
finish. A run killed anywhere resumes at the first step whose file is missing and, inside a
step, at the first episode not recorded. A file that exists but does not parse is a corrupt
folder: :class:`EvolveStateError`, and nothing is rewritten (η and its approved revisions stay).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..adapters import Revision
from ..errors import UsageError
from .bench_runs import OutcomeLog
from .compare import TaskOutcome
from .folder_lock import LOCK_NAME

__all__ = [
    "EVOLVE_SCHEMA",
    "Candidate",
    "Decision",
    "EvolveSettings",
    "EvolveStateError",
    "Harm",
    "IterationStart",
    "Paired",
    "Proposals",
    "Review",
    "StateFolder",
]

EVOLVE_SCHEMA = "pocketpilot.evolve/1"

M = TypeVar("M", bound=BaseModel)


class EvolveStateError(UsageError):
    """The output folder holds a state file that cannot be read (or was started with other settings)."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"evolve state {path}: {reason}")
        self.path, self.reason = str(path), reason


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EvolveSettings(_Record):
    """What a folder's runs must share to be one experiment (a resume with others is refused)."""

    tasks_dir: str
    dev_sample: int = Field(ge=1)
    evolve_sample: int = Field(ge=1)
    seed: int = 0
    max_candidates: int = Field(default=4, ge=1)
    evict_threshold: int = Field(default=2, ge=1)
    """Harm (see :mod:`.evolve_harm`) at which an experience entry becomes an eviction candidate."""
    harm_pairing: Literal["paired", "previous"] = "paired"
    """What a failed evolve task shown experience is compared with: the same task run again with
    experience off (``paired``), or its outcome in the previous iteration's baseline (``previous``)."""
    experience_pool: bool = False
    """Distil experience from the verified successes of every earlier iteration too (their dev samples
    and evolve baselines), not only this iteration's dev sample and the previous evolve baseline: a
    candidate not accepted is otherwise lost, so the library never outgrows one iteration's successes."""


class IterationStart(_Record):
    """An iteration's fixed inputs: the η it runs under and its task samples."""

    iteration: int
    eta_version: str
    dev: list[str]
    evolve: list[str]


class Candidate(_Record):
    """A proposed η revision with what it came from.

    ``kind`` says what it changes (``experience``, ``tool_text``, ``exposure``, ``memory_policy``, ...).
    """

    kind: str
    revision: Revision
    summary: str
    evidence: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def id(self) -> str:
        """The revision's id."""
        return self.revision.id


class Proposals(_Record):
    """Step 2-3 of an iteration: the candidates, and why some findings gave none."""

    candidates: list[Candidate]
    unmeasured: list[str] = Field(default_factory=list)
    """Candidate ids left out over ``max_candidates``."""
    skipped: list[str] = Field(default_factory=list)
    dev_successes: int
    dev_failures: int
    experience_entries: int = 0
    """Entries the distiller proposed (before merging into the library)."""
    evolve_successes: int = 0
    """Verified successes of the previous iteration's evolve runs (baseline and accepted) distilled too."""
    pooled_successes: int = 0
    """Verified successes of iterations before the previous one (and earlier dev samples) distilled too
    (``experience_pool`` on)."""
    pool_evicted: list[str] = Field(default_factory=list)
    """Entry ids the pool left out: an earlier iteration accepted their eviction."""


class Paired(_Record):
    """One configuration against the current η on the same evolve tasks, task by task."""

    label: str
    groups: dict[str, str]
    """Task id → group."""
    before: dict[str, bool]
    after: dict[str, bool]
    """Only the tasks run: a measurement stops once the rest cannot change the decision."""

    @property
    def gained(self) -> list[str]:
        """Tasks that fail under the current η and pass under this one."""
        return sorted(t for t in self.after if self.after[t] and not self.before.get(t, False))

    @property
    def lost(self) -> list[str]:
        """Tasks that pass under the current η and fail under this one."""
        return sorted(t for t in self.after if not self.after[t] and self.before.get(t, False))

    @property
    def net(self) -> int:
        """Gained minus lost."""
        return len(self.gained) - len(self.lost)

    def losses_by_group(self) -> dict[str, int]:
        """Lost tasks per group."""
        out: dict[str, int] = {}
        for t in self.lost:
            out[self.groups[t]] = out.get(self.groups[t], 0) + 1
        return out


class Harm(_Record):
    """Step 4's attribution: which experience entries the current η's failures point at (:mod:`.evolve_harm`)."""

    method: Literal["paired", "previous"]
    shown: dict[str, list[str]]
    """Task id → entries its run was shown, for the evolve tasks the current η fails."""
    without: dict[str, bool]
    """Task id → passed without those entries (the paired run, or the previous baseline; absent: not known)."""
    harmed: dict[str, list[str]]
    """Entry id → the tasks it harmed in this iteration."""
    accumulated: dict[str, int]
    """Entry id → harm over this and the earlier iterations (entries of the current η)."""
    candidates: list[Candidate] = Field(default_factory=list)
    """Eviction candidates, measured with the iteration's other candidates."""


class Decision(_Record):
    """Step 4-5: the measurements, the accepted candidates and the pending revision written for them."""

    measured: dict[str, Paired]
    """Label (a candidate id, or ``set``) → its paired result."""
    accepted: list[str]
    reason: str
    revision: Revision | None = None


class Review(_Record):
    """Step 6: what the reviewer did with the iteration's revision."""

    status: Literal["approved", "rejected", "none"]
    revision_id: str | None = None
    new_version: str | None = None
    approved_by: str | None = None


def _write_json(path: Path, data: Any) -> None:
    """Write atomically: a kill leaves the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True, ensure_ascii=False)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class StateFolder:
    """Reads and writes the files of one output folder (see the module docstring)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.eta_path = self.root / "eta.json"

    def iter_dir(self, iteration: int) -> Path:
        """The folder of iteration ``iteration`` (1-based)."""
        return self.root / f"iter-{iteration:02d}"

    def read(self, path: Path, model: type[M]) -> M | None:
        """The record at ``path`` (None: not written yet).

        Raises:
            EvolveStateError: it exists but is not such a record.
        """
        if not path.exists():
            return None
        try:
            return model.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValidationError) as exc:
            first = " ".join(str(exc).split())[:160]
            raise EvolveStateError(path, f"not a readable {model.__name__} record ({first}); the folder's "
                                         "η and approved revisions are untouched") from exc

    def write(self, path: Path, record: BaseModel) -> None:
        """Write a record (atomically)."""
        _write_json(path, record.model_dump(mode="json"))

    def write_text(self, path: Path, text: str) -> None:
        """Write a text file (atomically: a reader never sees half of it)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def settings(self, wanted: EvolveSettings) -> EvolveSettings:
        """The folder's settings: recorded on the first run, the same ones required on a resume.

        Raises:
            EvolveStateError: ``evolve.json`` is unreadable, or records other settings.
        """
        path = self.root / "evolve.json"
        if not path.exists():
            if self.root.exists() and any(p.name != LOCK_NAME for p in self.root.iterdir()):
                raise EvolveStateError(self.root, "not empty and not an evolve folder (no evolve.json)")
            _write_json(path, {"schema": EVOLVE_SCHEMA, "settings": wanted.model_dump(mode="json")})
            return wanted
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("schema") != EVOLVE_SCHEMA:
                raise ValueError(f"schema {raw.get('schema')!r}, expected {EVOLVE_SCHEMA}")
            recorded = EvolveSettings.model_validate(raw["settings"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ValidationError) as exc:
            raise EvolveStateError(path, f"not readable: {' '.join(str(exc).split())[:160]}") from exc
        if recorded != wanted:
            differ = [k for k in EvolveSettings.model_fields if getattr(recorded, k) != getattr(wanted, k)]
            raise EvolveStateError(path, "started with other settings (" + ", ".join(
                f"{k}={getattr(recorded, k)!r}" for k in differ) + "): resume with those, or use another --out")
        return recorded

    def outcomes(self, folder: Path) -> OutcomeLog:
        """The episode log of one run-set (dev, or one evolve configuration)."""
        return OutcomeLog(folder)

    def outcome_map(self, folder: Path) -> dict[str, TaskOutcome]:
        """Finished episodes of a run-set by task id (harness mode)."""
        return {tid: o for (tid, _), o in OutcomeLog(folder).load().items()}
