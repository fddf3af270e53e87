"""The curation store and its review queue: one SQLite file, every write one transaction.

Every curated record lands here with a status:

- ``accepted`` — passed curation; releasable.
- ``pending`` — waiting in the review queue (its ``reasons`` say why).
- ``approved`` / ``fixed`` — a reviewer let it in (``fixed``: with a corrected episode);
  releasable.
- ``rejected`` — never released. ``quarantined`` — never released and kept apart for
  inspection (e.g. suspected poisoning or a privacy problem).
- a ``rejected`` record from curation (schema failure) is stored as ``rejected`` too, so the
  same bad trace is not re-queued on the next pass.

A record is keyed by its content hash, so re-adding the same trace is a no-op. Decisions
apply only to ``pending`` records (changing one's mind needs an explicit ``reopen``), and a
``fix`` must pass the same schema check curation applies. The stdlib ``sqlite3`` suffices:
no extension is loaded.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from ..contracts import Episode
from ..errors import PocketPilotError, UsageError
from .curation import CuratedRecord, schema_check

__all__ = [
    "RELEASABLE",
    "CurationStore",
    "ReviewError",
    "ReviewNotFoundError",
    "Status",
]

logger = logging.getLogger(__name__)

Status = Literal["accepted", "pending", "approved", "fixed", "rejected", "quarantined"]
RELEASABLE: tuple[str, ...] = ("accepted", "approved", "fixed")
_SCHEMA_VERSION = 1


class ReviewError(PocketPilotError):
    """A review decision that cannot be applied (wrong state, invalid fix, corrupt store)."""


class ReviewNotFoundError(ReviewError, KeyError):
    """No record with that hash (or unique hash prefix)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class CurationStore:
    """Curated records and their review status in one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        """Open (create) the store.

        Raises:
            ReviewError: the file is not a curation store or has a newer schema.
        """
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise ReviewError(f"{self.path}: not a curation store ({exc})") from exc

    def _migrate(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version > _SCHEMA_VERSION:
            raise ReviewError(f"{self.path}: store schema {version} is newer than this pocketpilot")
        if version == 0:
            with self.transaction() as conn:
                conn.execute(
                    """CREATE TABLE records (
                        hash TEXT PRIMARY KEY,
                        status TEXT NOT NULL,
                        record TEXT NOT NULL,
                        fixed_episode TEXT,
                        note TEXT NOT NULL DEFAULT '',
                        created_at REAL NOT NULL,
                        decided_at REAL
                    )"""
                )
                conn.execute("CREATE INDEX records_status ON records(status)")
                conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write (BEGIN IMMEDIATE … COMMIT, ROLLBACK on any error)."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def close(self) -> None:
        """Close the file."""
        self._conn.close()

    def __enter__(self) -> CurationStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writes

    def add(self, records: Iterable[CuratedRecord]) -> dict[str, int]:
        """Store curated records (accept → ``accepted``, review → ``pending``, reject →
        ``rejected``) in one transaction; hashes already present are skipped.

        Returns counts per status plus ``duplicates``.
        """
        counts: dict[str, int] = {"accepted": 0, "pending": 0, "rejected": 0, "duplicates": 0}
        now = time.time()
        status_of = {"accept": "accepted", "review": "pending", "reject": "rejected"}
        with self.transaction() as conn:
            for rec in records:
                status = status_of[rec.decision]
                cur = conn.execute(
                    "INSERT OR IGNORE INTO records(hash, status, record, created_at) VALUES (?, ?, ?, ?)",
                    (rec.hash, status, rec.model_dump_json(), now),
                )
                if cur.rowcount:
                    counts[status] += 1
                else:
                    counts["duplicates"] += 1
        logger.info("%s: added %s", self.path, counts)
        return counts

    def _resolve(self, key: str) -> str:
        if len(key) < 6:
            raise UsageError("give at least 6 characters of a record hash")
        rows = self._conn.execute("SELECT hash FROM records WHERE hash LIKE ?", (key + "%",)).fetchall()
        if not rows:
            raise ReviewNotFoundError(f"no record {key!r} in {self.path}")
        if len(rows) > 1:
            raise UsageError(f"hash prefix {key!r} is ambiguous ({len(rows)} records)")
        return str(rows[0][0])

    def _decide(self, key: str, status: Status, note: str, fixed: str | None = None) -> CuratedRecord:
        full = self._resolve(key)
        with self.transaction() as conn:
            (current,) = conn.execute("SELECT status FROM records WHERE hash = ?", (full,)).fetchone()
            if current != "pending":
                raise ReviewError(f"record {full[:12]} is {current}, not pending: `reopen` it first")
            conn.execute(
                "UPDATE records SET status = ?, note = ?, fixed_episode = COALESCE(?, fixed_episode), decided_at = ?"
                " WHERE hash = ?",
                (status, note, fixed, time.time(), full),
            )
        logger.info("record %s -> %s", full[:12], status)
        return self.get(full)

    def approve(self, key: str, note: str = "") -> CuratedRecord:
        """Let a pending record into releases as it is."""
        return self._decide(key, "approved", note)

    def reject(self, key: str, note: str = "") -> CuratedRecord:
        """Keep a pending record out of every release."""
        return self._decide(key, "rejected", note)

    def quarantine(self, key: str, note: str = "") -> CuratedRecord:
        """Keep a pending record out of every release and flag it for inspection."""
        return self._decide(key, "quarantined", note)

    def fix(self, key: str, episode: dict[str, Any] | Episode, note: str = "") -> CuratedRecord:
        """Replace a pending record's episode with a corrected one and let it in.

        Raises:
            ReviewError: the corrected episode does not validate or fails the schema check.
        """
        try:
            fixed = episode if isinstance(episode, Episode) else Episode.model_validate(episode)
        except ValidationError as exc:
            raise ReviewError(f"the fixed episode does not validate: {exc.error_count()} error(s)") from exc
        problems = schema_check(fixed)
        if problems:
            raise ReviewError(f"the fixed episode fails the schema check: {'; '.join(problems)}")
        return self._decide(key, "fixed", note, fixed.model_dump_json())

    def reopen(self, key: str) -> CuratedRecord:
        """Put a decided record back into the queue (a reviewer changed their mind)."""
        full = self._resolve(key)
        with self.transaction() as conn:
            conn.execute("UPDATE records SET status = 'pending', decided_at = NULL WHERE hash = ?", (full,))
        return self.get(full)

    # ------------------------------------------------------------------ reads

    def status(self, key: str) -> str:
        """The status of one record."""
        full = self._resolve(key)
        return str(self._conn.execute("SELECT status FROM records WHERE hash = ?", (full,)).fetchone()[0])

    def get(self, key: str) -> CuratedRecord:
        """One record (hash or unique prefix of at least 6 characters)."""
        full = self._resolve(key)
        (raw,) = self._conn.execute("SELECT record FROM records WHERE hash = ?", (full,)).fetchone()
        return CuratedRecord.model_validate_json(raw)

    def detail(self, key: str) -> dict[str, Any]:
        """Status, note, decision time and the fixed episode (if any) of one record."""
        full = self._resolve(key)
        status, note, decided, fixed = self._conn.execute(
            "SELECT status, note, decided_at, fixed_episode FROM records WHERE hash = ?", (full,)
        ).fetchone()
        return {"hash": full, "status": status, "note": note, "decided_at": decided, "fixed": fixed is not None}

    def records(self, status: str | None = "pending") -> list[tuple[str, str, CuratedRecord]]:
        """(hash, status, record) of every record with ``status`` (None: all), oldest first."""
        sql = "SELECT hash, status, record FROM records"
        args: tuple[Any, ...] = ()
        if status is not None:
            sql += " WHERE status = ?"
            args = (status,)
        rows = self._conn.execute(sql + " ORDER BY created_at, hash", args).fetchall()
        return [(h, s, CuratedRecord.model_validate_json(r)) for h, s, r in rows]

    def releasable(self) -> list[tuple[CuratedRecord, Episode]]:
        """Records a release may contain, with the episode to export (the fix, when fixed).

        A fixed record keeps its original hash as its identity; the episode that ships is the
        reviewer's version, whose own content hash the release manifest records.
        """
        rows = self._conn.execute(
            f"SELECT record, fixed_episode FROM records WHERE status IN ({','.join('?' * len(RELEASABLE))})"
            " ORDER BY hash",
            RELEASABLE,
        ).fetchall()
        out = []
        for raw, fixed in rows:
            rec = CuratedRecord.model_validate_json(raw)
            episode = Episode.model_validate_json(fixed) if fixed else rec.to_episode()
            out.append((rec, episode))
        return out

    def counts(self) -> dict[str, int]:
        """Records per status."""
        return {s: int(n) for s, n in self._conn.execute("SELECT status, COUNT(*) FROM records GROUP BY status")}
