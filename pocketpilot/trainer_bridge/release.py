"""Releases: frozen, versioned training sets cut from the curation store.

A release is a directory ``<root>/<version>/`` holding the SFT set and the RL groups (JSONL,
and Parquet when the ``export`` extra is installed) and ``manifest.json``: the content hash of
every episode that shipped, the sha256 of every file, the sampling weight of every record by
capability, difficulty and source, what was excluded and why, and the manifest's own hash.
It is built in a temporary directory and renamed into place, its files are made read-only,
and a version that exists is never overwritten; :func:`verify_release` recomputes every hash.

Three exclusions are enforced here, whatever the store says:

- **held-out splits** — an episode of an ``evolve`` or ``test`` task (by task id, or by a
  request equal to such a task's goal) never ships: the evolve set measures harness revisions
  and the test set measures everything; training on either would inflate both.
- **deleted memories** — every retrieved memory whose id was deleted is scrubbed from the
  step (:func:`pocketpilot.memory.scrub_episode`) *and* from the ``memory_search`` results the
  planner saw; a record that still contains the text of a deleted memory (the model quoted it)
  is dropped whole.
- **deleted users** — an episode whose user (``harness_config["user_id"]``, or the owner of a
  private memory it retrieved) was deleted is dropped whole.

After the rows are built, a final leak check scans them for held-out task ids and deleted
memory ids and raises :class:`ReleaseLeakError` rather than write a tainted release.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..contracts import Episode, MemorySearch, utcnow
from ..errors import PocketPilotError, UsageError
from ..memory import SHARED_OWNER, scrub_episode
from ..memory.export import guard_episode, redact_row
from ..memory.ledger import DeletionLedger
from ..tasks import TaskSpec
from .export_io import ExportDependencyError, write_jsonl, write_parquet
from .export_rl import rl_groups
from .export_sft import sft_record
from .review import CurationStore

__all__ = [
    "ReleaseError",
    "ReleaseLeakError",
    "ReleaseManifest",
    "build_release",
    "difficulty_of",
    "episode_users",
    "scrub_deleted",
    "verify_release",
]

logger = logging.getLogger(__name__)

_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_WS = re.compile(r"\s+")
HELD_OUT = ("evolve", "test")


class ReleaseError(PocketPilotError):
    """A release cannot be built or does not verify."""


class ReleaseLeakError(ReleaseError):
    """Held-out or deleted data would have entered a release."""


class ReleaseManifest(BaseModel):
    """What a release holds, frozen."""

    model_config = ConfigDict(frozen=True)

    version: str
    parent: str | None
    created_at: str
    store: str
    counts: dict[str, int]
    excluded: dict[str, int]
    weights: dict[str, dict[str, float]]
    """Per dimension (capability, difficulty, source): the factor each value gets."""
    records: list[dict[str, Any]]
    """Per shipped episode: hash, store_hash, episode_id, task_id, capability, difficulty,
    source, success, in_sft, weight."""
    files: dict[str, str] = Field(default_factory=dict)
    """File name → sha256."""
    manifest_sha256: str = ""


def _norm_goal(text: str) -> str:
    return _WS.sub(" ", text).strip().lower()


def episode_users(episode: Episode) -> set[str]:
    """Users an episode belongs to: ``harness_config["user_id"]`` and owners of private
    memories it retrieved (the shared store's owner is nobody).
    """
    users: set[str] = set()
    uid = episode.header.harness_config.get("user_id")
    if isinstance(uid, str) and uid:
        users.add(uid)
    for step in episode.steps:
        for mem in step.retrieved:
            owner = mem.provenance.get("owner")
            if isinstance(owner, str) and owner and owner != SHARED_OWNER:
                users.add(owner)
        for child in step.children:
            users |= episode_users(child)
    return users


def scrub_deleted(episode: Episode, deleted_ids: Iterable[str]) -> tuple[Episode, list[str]]:
    """Remove deleted memories from ``episode``; returns (scrubbed, texts of removed memories).

    :func:`pocketpilot.memory.scrub_episode` does the scrubbing (``Step.retrieved`` and the
    ``memory_search`` results the planner saw); the removed texts let the release check that
    none of them survives anywhere else in the exported records.
    """
    deleted = set(deleted_ids)
    if not deleted:
        return episode, []
    removed = [m.content for s in episode.steps for m in s.retrieved if m.id in deleted]
    for step in episode.steps:
        if isinstance(step.action, MemorySearch):
            for res in step.results:
                data = res.data
                if isinstance(data, dict) and isinstance(data.get("memories"), list):
                    removed += [str(m.get("content", "")) for m in data["memories"]
                                if isinstance(m, dict) and m.get("id") in deleted]
    return scrub_episode(episode, deleted), [t for t in removed if t.strip()]


def difficulty_of(success_rate: float) -> str:
    """Bucket a task's observed success rate: easy (≥ 0.8), hard (≤ 0.3), else medium."""
    if success_rate >= 0.8:
        return "easy"
    if success_rate <= 0.3:
        return "hard"
    return "medium"


def _balance(values: Sequence[str]) -> dict[str, float]:
    """Inverse-frequency factors: each value's records together weigh the same."""
    counts = Counter(values)
    n, k = len(values), len(counts)
    return {v: n / (k * c) for v, c in sorted(counts.items())}


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _manifest_hash(manifest: ReleaseManifest) -> str:
    body = manifest.model_dump(mode="json", exclude={"manifest_sha256"})
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _parent(root: Path) -> str | None:
    best: tuple[str, str] | None = None
    for manifest in root.glob("*/manifest.json"):
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        key = (str(data.get("created_at", "")), str(data.get("version", "")))
        if best is None or key > best:
            best = key
    return best[1] if best else None


def build_release(
    store: CurationStore,
    root: str | Path,
    version: str,
    *,
    tasks: Sequence[TaskSpec] | None = None,
    deleted_memory_ids: Iterable[str] = (),
    deleted_users: Iterable[str] = (),
    parquet: bool | None = None,
    group_size: int | None = None,
    ledger: DeletionLedger | None = None,
) -> ReleaseManifest:
    """Cut release ``version`` under ``root`` from the store's releasable records.

    Args:
        store: The curation store (records ``accepted``, ``approved`` or ``fixed`` ship).
        root: Directory holding all releases; the new one goes to ``root/version``.
        version: A new version name (letters, digits, ``._-``).
        tasks: The task suite whose evolve/test splits are held out (default: the bundled suite).
        deleted_memory_ids: Ids of deleted memories (``SqliteMemory.deleted_ids(admin)``).
        deleted_users: Ids of users whose data was deleted.
        parquet: Also write Parquet; None writes it when pyarrow is installed.
        group_size: G for the RL groups (None: all of a task's rollouts in one group).
        ledger: The memory stores' deletion ledger (``SqliteMemory.deletion_ledger(admin)``):
            an episode quoting a memory deleted after it ran is left out, even where the
            quote carries no id. Secrets are redacted from every row either way.

    Raises:
        UsageError: a bad version name. ReleaseError: the version exists, or nothing to release.
        ReleaseLeakError: held-out or deleted data survived the filters.
    """
    root = Path(root)
    _check_new_version(root, version)
    filters = _Filters.of(tasks, deleted_memory_ids, deleted_users, ledger)
    excluded: Counter[str] = Counter()
    shipped = _shipped(store, filters, excluded)
    entries, sft_rows = _entries_and_sft_rows(shipped)
    rl_rows = [redact_row(g.row()) for g in rl_groups([ep for _, ep in shipped], group_size=group_size, min_size=1)]
    weights = _weigh(entries)
    _leak_check(sft_rows, rl_rows, filters.held_ids, filters.deleted_ids)
    cut = _Cut(entries=entries, sft_rows=sft_rows, rl_rows=rl_rows, weights=weights,
               excluded=dict(sorted(excluded.items())))
    manifest = _publish(cut, store, root, version, parquet)
    logger.info("release %s: %s, excluded %s", version, manifest.counts, manifest.excluded)
    return manifest


def _check_new_version(root: Path, version: str) -> None:
    """Refuse a version name that is no plain directory name, or one that exists: releases are frozen."""
    if not _VERSION.match(version):
        raise UsageError(f"bad release version {version!r}: letters, digits and ._- only")
    final = root / version
    if final.exists():
        raise ReleaseError(f"release {version} already exists at {final}: releases are frozen")


@dataclass(frozen=True)
class _Filters:
    """What must not ship: held-out tasks (by id or goal), deleted users and deleted memories."""

    held_ids: set[str]
    held_goals: set[str]
    gone_users: set[str]
    deleted_ids: set[str]
    ledger: DeletionLedger | None

    @classmethod
    def of(cls, tasks: Sequence[TaskSpec] | None, deleted_memory_ids: Iterable[str], deleted_users: Iterable[str],
           ledger: DeletionLedger | None) -> _Filters:
        """The filters for ``tasks``' held-out splits (the bundled suite's when None) and the deletions."""
        if tasks is None:
            from ..tasks import load_suite

            tasks = load_suite()
        held = [t for t in tasks if t.split in HELD_OUT]
        return cls(held_ids={t.id for t in held}, held_goals={_norm_goal(t.goal) for t in held},
                   gone_users=set(deleted_users), deleted_ids=set(deleted_memory_ids), ledger=ledger)

    def admit(self, task_id: str | None, episode: Episode, excluded: Counter[str]) -> Episode | None:
        """The episode as it may ship, or None; each exclusion is counted in ``excluded`` under its reason."""
        if (task_id and task_id in self.held_ids) or _norm_goal(episode.header.request) in self.held_goals:
            excluded["held_out_split"] += 1
            return None
        if episode_users(episode) & self.gone_users:
            excluded["deleted_user"] += 1
            return None
        return self._without_deleted_memories(episode, excluded)

    def _without_deleted_memories(self, episode: Episode, excluded: Counter[str]) -> Episode | None:
        """The episode with deleted memories scrubbed, or None where it still quotes one.

        A quote is found by the removed text itself, and through the ledger for a memory deleted
        after the run (whose quote may carry no id).
        """
        episode, removed = scrub_deleted(episode, self.deleted_ids)
        if removed:
            text = episode.model_dump_json()
            if any(t in text for t in removed):
                excluded["quotes_deleted_memory"] += 1
                return None
            excluded["memories_scrubbed"] += len(removed)
        if self.ledger:
            guarded = guard_episode(episode, self.ledger)
            if guarded is None:
                excluded["quotes_deleted_memory"] += 1
            return guarded
        return episode


def _shipped(store: CurationStore, filters: _Filters, excluded: Counter[str]) -> list[tuple[dict[str, Any], Episode]]:
    """The releasable records that pass the filters, each as (its record as JSON, the episode that ships).

    Raises:
        ReleaseError: none passes.
    """
    shipped: list[tuple[dict[str, Any], Episode]] = []
    for rec, episode in store.releasable():
        kept = filters.admit(rec.task_id, episode, excluded)
        if kept is not None:
            shipped.append((rec.model_dump(mode="json"), kept))
    if not shipped:
        raise ReleaseError("nothing to release: no releasable record survived the filters")
    return shipped


def _outcomes_by_task(shipped: Sequence[tuple[dict[str, Any], Episode]]) -> dict[str, list[bool]]:
    """The verified outcomes of each task among the shipped episodes: what a task's difficulty is read from."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for _rec, ep in shipped:
        if ep.header.task_id and ep.verdict is not None:
            by_task[ep.header.task_id].append(ep.verdict.success)
    return by_task


def _entries_and_sft_rows(
    shipped: Sequence[tuple[dict[str, Any], Episode]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The manifest's entry of every shipped episode, and the (redacted) SFT rows of the eligible ones."""
    by_task = _outcomes_by_task(shipped)
    sft_rows = []
    entries: list[dict[str, Any]] = []
    for rec, ep in shipped:
        record = sft_record(ep, complete=bool(rec["complete"]))
        if record.eligible:
            sft_rows.append(redact_row(record.row()))
        entries.append(_entry(rec, ep, record.eligible, by_task.get(ep.header.task_id or "")))
    return entries, sft_rows


def _entry(rec: dict[str, Any], ep: Episode, in_sft: bool, outcomes: list[bool] | None) -> dict[str, Any]:
    """One shipped episode as the manifest records it (its weight is added once all are known)."""
    return {
        "hash": hashlib.sha256(ep.model_dump_json().encode()).hexdigest(),
        "store_hash": rec["hash"],
        "episode_id": ep.header.episode_id,
        "task_id": ep.header.task_id,
        "capability": rec["capability"] or "unknown",
        "difficulty": difficulty_of(sum(outcomes) / len(outcomes)) if outcomes else "unknown",
        "source": rec["source"],
        "success": ep.verdict.success if ep.verdict else None,
        "in_sft": in_sft,
    }


def _weigh(entries: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Set each entry's sampling weight (mean 1) so capabilities, difficulties and sources weigh alike.

    Returns:
        Per dimension, the factor each value gets.
    """
    weights = {dim: _balance([e[dim] for e in entries]) for dim in ("capability", "difficulty", "source")}
    raw = [weights["capability"][e["capability"]] * weights["difficulty"][e["difficulty"]] * weights["source"][e["source"]]
           for e in entries]
    mean = sum(raw) / len(raw)
    for e, w in zip(entries, raw, strict=True):
        e["weight"] = round(w / mean, 6)
    return weights


@dataclass(frozen=True)
class _Cut:
    """What a release holds, before it is written."""

    entries: list[dict[str, Any]]
    sft_rows: list[dict[str, Any]]
    rl_rows: list[dict[str, Any]]
    weights: dict[str, dict[str, float]]
    excluded: dict[str, int]


def _publish(cut: _Cut, store: CurationStore, root: Path, version: str, parquet: bool | None) -> ReleaseManifest:
    """Write the release in a temporary directory under ``root`` and rename it into place, read-only.

    A reader never sees half a release, and a failure leaves nothing behind.
    """
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{version}."))
    try:
        _write_tables(tmp, cut, parquet, version)
        files = {p.name: _sha256_file(p) for p in sorted(tmp.iterdir()) if p.is_file()}
        manifest = _manifest(cut, store, root, version, files)
        (tmp / "manifest.json").write_text(manifest.model_dump_json(indent=2), encoding="utf-8")
        for p in tmp.iterdir():
            p.chmod(0o444)
        os.rename(tmp, root / version)  # fails if another process created the version meanwhile
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def _write_tables(folder: Path, cut: _Cut, parquet: bool | None, version: str) -> None:
    """Write the SFT and RL tables as JSONL, and as Parquet unless ``parquet`` is False.

    Raises:
        ExportDependencyError: ``parquet`` is True and pyarrow is not installed (None falls back to JSONL only).
    """
    # an empty dataset file is left out, not written: datasets.load_dataset cannot open one
    tables = [(name, rows) for name, rows in (("sft", cut.sft_rows), ("rl", cut.rl_rows)) if rows]
    for name, rows in tables:
        write_jsonl(rows, folder / f"{name}.jsonl")
    if parquet is False:
        return
    try:
        for name, rows in tables:
            write_parquet(rows, folder / f"{name}.parquet", name)  # type: ignore[arg-type]
    except ExportDependencyError:
        if parquet:
            raise
        logger.info("pyarrow not installed: release %s ships JSONL only", version)


def _manifest(cut: _Cut, store: CurationStore, root: Path, version: str, files: dict[str, str]) -> ReleaseManifest:
    """The release's manifest, sealed with its own hash."""
    manifest = ReleaseManifest(
        version=version,
        parent=_parent(root),
        created_at=utcnow().isoformat(),
        store=str(store.path),
        counts={"episodes": len(cut.entries), "sft": len(cut.sft_rows), "rl_groups": len(cut.rl_rows)},
        excluded=cut.excluded,
        weights=cut.weights,
        records=cut.entries,
        files=files,
    )
    return manifest.model_copy(update={"manifest_sha256": _manifest_hash(manifest)})


def _leak_check(
    sft_rows: list[dict[str, Any]], rl_rows: list[dict[str, Any]], held_ids: set[str], deleted_ids: set[str]
) -> None:
    for row in [*sft_rows, *rl_rows]:
        if row.get("task_id") in held_ids:
            raise ReleaseLeakError(f"held-out task {row['task_id']} reached the release rows")
    if deleted_ids:
        blob = json.dumps([sft_rows, rl_rows])
        for mid in deleted_ids:
            if mid in blob:
                raise ReleaseLeakError(f"deleted memory {mid} reached the release rows")


def verify_release(path: str | Path) -> ReleaseManifest:
    """Re-hash a release's files and manifest.

    Raises:
        ReleaseError: a missing or modified file, an extra file, or a tampered manifest.
    """
    d = Path(path)
    try:
        manifest = ReleaseManifest.model_validate_json((d / "manifest.json").read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReleaseError(f"{d}: no readable manifest.json") from exc
    except ValueError as exc:
        raise ReleaseError(f"{d}: manifest.json does not validate") from exc
    if _manifest_hash(manifest) != manifest.manifest_sha256:
        raise ReleaseError(f"{d}: manifest hash mismatch (the manifest was edited)")
    present = {p.name for p in d.iterdir() if p.is_file() and p.name != "manifest.json"}
    if present != set(manifest.files):
        raise ReleaseError(f"{d}: files differ from the manifest: {sorted(present ^ set(manifest.files))}")
    for name, sha in manifest.files.items():
        if _sha256_file(d / name) != sha:
            raise ReleaseError(f"{d}/{name}: sha256 mismatch (the file was modified)")
    return manifest
