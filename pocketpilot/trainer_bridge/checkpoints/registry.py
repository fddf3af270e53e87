"""The version registry: every imported checkpoint, its hashes, gates and serving state.

One JSON file under the pocketpilot home (``checkpoints/registry.json``) beside the stored
files (``checkpoints/files/``). Every change happens under an exclusive ``flock`` and is
written to a temporary file that replaces the old one, so a crash leaves either the old or
the new registry, never half of one, and two CLI processes never interleave their edits.

States: ``candidate`` (imported, gates pending or passed, not serving), ``serving`` (exactly
one at a time), ``rejected`` (a gate or a check said no), ``retired`` (served once; rollback
target). ``history`` lists the versions that served, in order: rollback steps back along it.

Every way onto the serving pointer (``promote``, ``rollback``) re-hashes the version's files
first, and a version that never served must pass :mod:`.promotion`'s rule; a rollback only
goes back to a version that served before (``retired``), so it cannot smuggle in an ungated
candidate.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...contracts import utcnow
from ...models.store import file_sha256, pocketpilot_home
from .errors import CheckpointIntegrityError, PromotionRefusedError, RegistryError
from .parity import ModelTarget
from .promotion import check_force_reason, promotion_blockers

__all__ = ["ModelVersion", "Registry", "RegistryData", "VersionState"]

logger = logging.getLogger(__name__)

VersionState = Literal["serving", "candidate", "rejected", "retired"]


class ModelVersion(BaseModel):
    """One registered checkpoint and what it deploys as."""

    model_config = ConfigDict(extra="forbid")

    id: str
    kind: Literal["model", "adapter"]
    model_path: str
    """The model file llama.cpp loads (for an adapter: the base it applies to)."""
    model_sha256: str
    lora_path: str | None = None
    lora_sha256: str | None = None
    source: str
    """Where the checkpoint was imported from."""
    source_sha256: str
    architecture: str | None = None
    quant_type: str | None = None
    parent: str | None = None
    """The version serving when this one was imported."""
    state: VersionState = "candidate"
    gates: dict[str, Any] = Field(default_factory=dict)
    note: str = ""
    forced: str | None = None
    """Why it serves although a gate did not pass or did not run (``--force --reason``)."""
    created_at: datetime = Field(default_factory=utcnow)

    @property
    def target(self) -> ModelTarget:
        """What a planner loads to serve this version."""
        return ModelTarget(Path(self.model_path), Path(self.lora_path) if self.lora_path else None)


class RegistryData(BaseModel):
    """The registry file's content."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    versions: list[ModelVersion] = Field(default_factory=list)
    history: list[str] = Field(default_factory=list)

    def get(self, version_id: str) -> ModelVersion:
        """The version with that id."""
        for v in self.versions:
            if v.id == version_id:
                return v
        raise RegistryError(f"no version {version_id!r}; known: {', '.join(v.id for v in self.versions) or 'none'}")

    def serving(self) -> ModelVersion | None:
        """The version serving now, if any."""
        return self.get(self.history[-1]) if self.history else None


class Registry:
    """File-backed registry; every method re-reads the file, so several processes can share it."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else pocketpilot_home() / "checkpoints"
        self.path = self.root / "registry.json"
        self.files = self.root / "files"

    # ------------------------------------------------------------------ storage

    def load(self) -> RegistryData:
        """The registry as it is on disk now (empty if there is none yet)."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return RegistryData()
        except OSError as exc:
            raise RegistryError(f"cannot read {self.path}: {exc.strerror}") from exc
        try:
            return RegistryData.model_validate_json(text)
        except ValidationError as exc:
            raise RegistryError(f"{self.path} is not a valid registry: {exc.errors()[0]['msg']}") from exc

    @contextlib.contextmanager
    def edit(self) -> Iterator[RegistryData]:
        """Lock, load, let the caller change the data, then replace the file atomically.

        Nothing is written if the body raises.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / "registry.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                data = self.load()
                yield data
                tmp = self.path.with_name(f".registry.{os.getpid()}.tmp")
                tmp.write_text(data.model_dump_json(indent=2))
                with tmp.open("rb") as fh:
                    os.fsync(fh.fileno())
                os.replace(tmp, self.path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    # ------------------------------------------------------------------ queries

    def versions(self) -> list[ModelVersion]:
        """Every version, oldest first."""
        return self.load().versions

    def get(self, version_id: str) -> ModelVersion:
        """One version by id."""
        return self.load().get(version_id)

    def serving(self) -> ModelVersion | None:
        """The version serving now."""
        return self.load().serving()

    # ------------------------------------------------------------------ changes

    def add(self, version: ModelVersion) -> ModelVersion:
        """Register ``version`` under the next free id (``v1``, ``v2``, …) and return it."""
        with self.edit() as data:
            taken = {v.id for v in data.versions}
            n = len(data.versions) + 1
            while f"v{n}" in taken:
                n += 1
            version = version.model_copy(update={"id": f"v{n}"})
            if version.state == "serving":
                raise RegistryError("add a version as candidate, then promote it")
            data.versions.append(version)
        return version

    def update(self, version_id: str, **changes: Any) -> ModelVersion:
        """Change fields of a version (not its state to serving: use promote)."""
        if changes.get("state") == "serving":
            raise RegistryError("use promote() to make a version serve")
        with self.edit() as data:
            v = data.get(version_id)
            new = ModelVersion.model_validate({**v.model_dump(), **changes})
            data.versions[data.versions.index(v)] = new
        return new

    def promotion_blockers(self, version_id: str) -> list[str]:
        """Why ``version_id`` may not serve now (empty: it may); see :mod:`.promotion`."""
        return self._blockers(self.get(version_id))

    @staticmethod
    def _blockers(v: ModelVersion) -> list[str]:
        if v.state == "rejected":
            return [f"it was rejected ({v.note})"]
        if v.state in ("serving", "retired"):  # it served, so it was admitted when it first did
            return []
        return promotion_blockers(v.gates)

    def promote(self, version_id: str, *, force_reason: str | None = None) -> ModelVersion:
        """Make ``version_id`` the serving version (the previous one is retired).

        Its files are re-hashed first. A version that never served needs every gate passed,
        or ``force_reason``, which is then recorded on it.

        Raises:
            CheckpointIntegrityError: a file is missing or no longer matches its sha256.
            PromotionRefusedError: a gate did not run or did not pass, and no reason was given.
            RegistryError: unknown or rejected version.
        """
        reason = check_force_reason(force_reason)
        v = self.get(version_id)
        if v.state == "rejected":
            raise RegistryError(f"{version_id} was rejected ({v.note}); import it again to retry")
        self.verify(v)
        with self.edit() as data:
            v = data.get(version_id)
            current = data.serving()
            if current is not None and current.id == version_id:
                return v
            if v.state == "rejected":
                raise RegistryError(f"{version_id} was rejected ({v.note}); import it again to retry")
            blockers = self._blockers(v)
            changes: dict[str, Any] = {"state": "serving"}
            if blockers:
                if reason is None:
                    raise PromotionRefusedError(version_id, blockers)
                overridden = "forced over: " + "; ".join(blockers)
                changes.update(forced=reason, note=f"{v.note}; {overridden}" if v.note else overridden)
            if current is not None:
                self._set(data, current.id, state="retired")
            new = self._set(data, version_id, **changes)
            data.history.append(version_id)
        if new.forced and blockers:
            logger.warning("promoted %s over its gates (%s): %s", version_id, "; ".join(blockers), new.forced)
        else:
            logger.info("promoted %s", version_id)
        return new

    def rollback_target(self, to: str | None = None) -> ModelVersion:
        """The version a rollback would serve: ``to``, or the one that served before the current."""
        data = self.load()
        current = data.serving()
        if current is None:
            raise RegistryError("nothing is serving: nothing to roll back")
        if to is not None:
            target = data.get(to)
            if target.id == current.id:
                raise RegistryError(f"{to} is already serving")
            if target.state == "rejected":
                raise RegistryError(f"{to} was rejected ({target.note}); it cannot serve")
            if target.state != "retired":
                raise RegistryError(f"{to} never served: promote it instead (its gates must pass)")
            return target
        for vid in reversed(data.history[:-1]):
            if vid != current.id and data.get(vid).state != "rejected":
                return data.get(vid)
        raise RegistryError(f"{current.id} is the first version that served: nothing to roll back to")

    def rollback(self, to: str | None = None) -> ModelVersion:
        """Serve the previous version (or ``to``); the current one is retired. Verifies files first."""
        target = self.rollback_target(to)
        self.verify(target)
        with self.edit() as data:
            current = data.serving()
            if current is None or data.get(target.id).state == "rejected":
                raise RegistryError("the registry changed during rollback; try again")
            self._set(data, current.id, state="retired", note=f"rolled back to {target.id}")
            new = self._set(data, target.id, state="serving")
            if to is None and len(data.history) >= 2 and data.history[-2] == target.id:
                data.history.pop()
            else:
                data.history.append(target.id)
        logger.info("rolled back %s -> %s", current.id, target.id)
        return new

    def verify(self, version: ModelVersion) -> None:
        """Re-hash the version's files against the recorded sha256 (tampering, truncation, deletion).

        Raises:
            CheckpointIntegrityError: a file is missing or its sha256 no longer matches.
        """
        files = [(version.model_path, version.model_sha256)]
        if version.lora_path:
            files.append((version.lora_path, version.lora_sha256 or ""))
        for path, expected in files:
            p = Path(path)
            if not p.is_file():
                raise CheckpointIntegrityError(path, f"file of {version.id} is missing")
            actual = file_sha256(p)
            if actual != expected:
                raise CheckpointIntegrityError(
                    path,
                    f"sha256 {actual[:16]}… does not match {expected[:16]}… recorded for {version.id}: "
                    "tampered or corrupted",
                )

    @staticmethod
    def _set(data: RegistryData, version_id: str, **changes: Any) -> ModelVersion:
        v = data.get(version_id)
        new = v.model_copy(update=changes)
        data.versions[data.versions.index(v)] = new
        return new

    def dump(self) -> dict[str, Any]:
        """The registry as plain JSON data."""
        return json.loads(self.load().model_dump_json())
