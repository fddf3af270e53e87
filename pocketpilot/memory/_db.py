"""The SQLite connection: apsw + sqlite-vec + FTS5, WAL, explicit transactions, migrations.

The stdlib ``sqlite3`` of the target Pythons cannot load extensions, so the store talks to
SQLite through apsw, which is not DB-API: nothing happens in a transaction unless we say
``BEGIN``. Every write goes through :meth:`Database.transaction` (``BEGIN IMMEDIATE``, so a
second process waits on the busy timeout instead of failing mid-transaction).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import sqlite_vec

from ..errors import MemorySchemaError, MemoryStoreError
from .errors import MemoryFileError

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "Database"]

logger = logging.getLogger(__name__)

APPLICATION_ID = 0x50504D31  # "PPM1": marks a file as a pocketpilot memory store
BUSY_TIMEOUT_MS = 10_000
CACHE_KIB = 16_384
"""SQLite page cache per connection (the store uses two: writes and BM25 reads)."""

_V1 = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE items(
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    tier TEXT NOT NULL CHECK (tier IN ('user','episodic','long_term','prospective','review')),
    proposed_tier TEXT,
    category TEXT,
    key TEXT,
    content TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active','superseded','candidate','rejected')),
    importance REAL NOT NULL,
    trust REAL NOT NULL,
    source TEXT NOT NULL,
    session_id TEXT,
    step INTEGER,
    observed_at REAL NOT NULL,
    evidence TEXT,
    created_at REAL NOT NULL,
    state TEXT CHECK (state IS NULL OR state IN ('pending','done','cancelled')),
    due_at REAL,
    due_condition TEXT,
    supersedes TEXT,
    superseded_by TEXT,
    conflicts_with TEXT,
    review_reason TEXT,
    consolidated_into TEXT,
    recall_count INTEGER NOT NULL DEFAULT 0,
    last_recalled_at REAL,
    has_vector INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX items_owner_tier ON items(owner, tier, status);
CREATE INDEX items_owner_key ON items(owner, key) WHERE key IS NOT NULL;
CREATE INDEX items_owner_hash ON items(owner, content_hash);
CREATE INDEX items_no_vector ON items(has_vector) WHERE has_vector = 0;
CREATE VIRTUAL TABLE items_fts USING fts5(
    content, category, content='items', content_rowid='rid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER items_ai AFTER INSERT ON items BEGIN
    INSERT INTO items_fts(rowid, content, category) VALUES (new.rid, new.content, new.category);
END;
CREATE TRIGGER items_ad AFTER DELETE ON items BEGIN
    INSERT INTO items_fts(items_fts, rowid, content, category)
        VALUES ('delete', old.rid, old.content, old.category);
END;
CREATE TRIGGER items_au AFTER UPDATE OF content, category ON items BEGIN
    INSERT INTO items_fts(items_fts, rowid, content, category)
        VALUES ('delete', old.rid, old.content, old.category);
    INSERT INTO items_fts(rowid, content, category) VALUES (new.rid, new.content, new.category);
END;
CREATE TABLE recalls(
    session_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    item_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (session_id, content_hash)
);
CREATE TABLE deleted(id TEXT PRIMARY KEY, owner TEXT NOT NULL, deleted_at REAL NOT NULL);
"""

Migration = Callable[[apsw.Connection], None]


def _v1(conn: apsw.Connection) -> None:
    conn.execute(_V1)


_V2 = """
CREATE TABLE items_emb(rid INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
CREATE TABLE items_bits(
    owner TEXT NOT NULL,
    rid INTEGER NOT NULL,
    tier TEXT NOT NULL,
    live INTEGER NOT NULL,
    bits BLOB NOT NULL,
    PRIMARY KEY (owner, rid)
) WITHOUT ROWID;
CREATE UNIQUE INDEX items_bits_rid ON items_bits(rid);
"""


def _v2(conn: apsw.Connection) -> None:
    """Vectors move from vec0 tables to ordinary ones (see :mod:`.vectors` for the measurements).

    Float vectors go to ``items_emb`` (one ``rid IN (…)`` statement fetches a rerank
    shortlist); sign bits go to ``items_bits``, clustered by owner so one owner's bits load
    with one range scan into the in-RAM hamming index. Stores of schema 1 that had vectors
    keep them: they are copied, then the vec0 tables are dropped.
    """
    conn.execute(_V2)
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'items_vec'").fetchone():
        conn.execute("INSERT INTO items_emb(rid, embedding) SELECT rid, embedding FROM items_vec")
        conn.execute(
            "INSERT INTO items_bits(owner, rid, tier, live, bits) "
            "SELECT i.owner, i.rid, i.tier, i.status IN ('active', 'candidate'), vec_quantize_binary(e.embedding) "
            "FROM items i JOIN items_emb e ON e.rid = i.rid"
        )
        conn.execute("DROP TABLE items_vec")
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'items_vbit'").fetchone():
        conn.execute("DROP TABLE items_vbit")


_V3 = """
CREATE TABLE deleted_text(
    owner TEXT NOT NULL,
    digest BLOB NOT NULL,
    span INTEGER NOT NULL,
    deleted_at REAL NOT NULL,
    PRIMARY KEY (owner, digest)
) WITHOUT ROWID;
CREATE INDEX items_owner_observed ON items(owner, observed_at);
INSERT INTO items_fts(items_fts, rank) VALUES ('secure-delete', 1);
"""


def _v3(conn: apsw.Connection) -> None:
    """The deletion ledger's quote digests, the owner's newest event, and FTS5 secure-delete.

    ``deleted_text`` holds keyed digests of the word windows of deleted memories (see
    :mod:`.ledger`), never their text. ``items_owner_observed`` answers "the owner's newest
    event" with one index probe, which verification measures staleness against. FTS5's
    ``secure-delete`` removes a deleted row's terms from the segment pages at once instead
    of leaving them behind a delete marker until the next merge.
    """
    conn.execute(_V3)


MIGRATIONS: list[Migration] = [_v1, _v2, _v3]
"""``MIGRATIONS[i]`` moves a store from ``user_version`` i to i + 1. Append, never edit."""
SCHEMA_VERSION = len(MIGRATIONS)


class Database:
    """One store file: an apsw connection with sqlite-vec loaded, guarded by a lock.

    apsw refuses concurrent use of one connection from two threads, and the async facade
    runs calls on worker threads, so every use holds ``lock``.
    """

    def __init__(self, path: str | Path) -> None:
        """Open (creating if needed) and migrate the store at ``path``.

        Raises:
            MemoryFileError: Not a SQLite file, corrupt, or another application's database.
            MemorySchemaError: Written by a newer pocketpilot (``user_version`` too high).
        """
        self.path = str(path)
        self.lock = threading.RLock()
        self._reader: apsw.Connection | None = None
        self._reader_lock = threading.Lock()
        try:
            self.conn = apsw.Connection(self.path)
        except apsw.Error as exc:
            raise MemoryFileError(self.path, f"cannot open: {exc}") from exc
        try:
            self.conn.setbusytimeout(BUSY_TIMEOUT_MS)
            self.conn.enable_load_extension(True)
            self.conn.load_extension(sqlite_vec.loadable_path())
            self.conn.enable_load_extension(False)
            self._configure()
            self._migrate()
        except MemoryStoreError:
            self.conn.close()
            raise
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            self.conn.close()
            raise MemoryFileError(self.path, f"not a valid SQLite database: {exc}") from exc
        except apsw.Error as exc:
            self.conn.close()
            raise MemoryFileError(self.path, f"cannot initialise: {exc}") from exc

    def _configure(self) -> None:
        mode = self.scalar("PRAGMA journal_mode=WAL")
        if self.path != ":memory:" and str(mode).lower() != "wal":
            logger.warning("%s: journal_mode is %s, not WAL", self.path, mode)
        # NORMAL in WAL mode loses no committed transaction on a process crash (kill -9),
        # only possibly the last ones on power loss.
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        # Deleted rows are overwritten with zeros, not left readable in free pages.
        self.conn.execute("PRAGMA secure_delete=ON")
        self._tune(self.conn)

    @staticmethod
    def _tune(conn: apsw.Connection) -> None:
        # No mmap: mapped file pages count as the process's resident memory (a 100k store
        # served queries at 450 MB RSS with a 256 MB mmap, 130 MB of it anonymous). Reads go
        # through SQLite's page cache (bounded here) and the OS page cache instead.
        conn.execute("PRAGMA mmap_size=0")
        conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")

    def _migrate(self) -> None:
        with self.transaction():
            version = int(self.scalar("PRAGMA user_version"))
            app_id = int(self.scalar("PRAGMA application_id"))
            if version == 0:
                tables = self.scalar("SELECT count(*) FROM sqlite_master")
                if app_id not in (0, APPLICATION_ID) or tables:
                    raise MemoryFileError(self.path, "an existing database that is not a pocketpilot store")
            elif app_id != APPLICATION_ID:
                raise MemoryFileError(self.path, f"application_id {app_id:#x} is not a pocketpilot store")
            if version > SCHEMA_VERSION:
                raise MemorySchemaError(
                    f"{self.path}: schema version {version} is newer than this pocketpilot "
                    f"supports ({SCHEMA_VERSION}); upgrade pocketpilot"
                )
            for target in range(version, SCHEMA_VERSION):
                logger.info("%s: migrating memory schema %d -> %d", self.path, target, target + 1)
                MIGRATIONS[target](self.conn)
                # PRAGMAs do not take bound parameters; both values are ints we control.
                self.conn.execute(f"PRAGMA user_version={target + 1}")
            if version < SCHEMA_VERSION:
                self.conn.execute(f"PRAGMA application_id={APPLICATION_ID}")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[apsw.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; rolls back on any exception (nesting uses savepoints)."""
        with self.lock:
            if not self.conn.getautocommit():
                with self.conn:  # apsw: a savepoint inside the open transaction
                    yield self.conn
                return
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def query(self, sql: str, params: Any = ()) -> list[Any]:
        """Run a read and return every row."""
        with self.lock:
            return list(self.conn.execute(sql, params))

    @property
    def has_reader(self) -> bool:
        """True when :meth:`read_query` runs on its own connection (file stores; not ``:memory:``)."""
        return self.path not in ("", ":memory:") and not self.path.startswith("file::memory:")

    def read_query(self, sql: str, params: Any = ()) -> list[Any]:
        """Run a read on a second connection, so it can overlap work on the main one.

        Retrieval runs the BM25 side here on a worker thread while the calling thread embeds
        the query and scans vectors (apsw and onnxruntime release the GIL). In WAL mode the
        two connections read concurrently; each read sees the last committed state.
        """
        if not self.has_reader:
            return self.query(sql, params)
        with self._reader_lock:
            if self._reader is None:
                reader = apsw.Connection(self.path, flags=apsw.SQLITE_OPEN_READONLY)
                reader.setbusytimeout(BUSY_TIMEOUT_MS)
                self._tune(reader)
                self._reader = reader
            return list(self._reader.execute(sql, params))

    def scalar(self, sql: str, params: Any = ()) -> Any:
        """Run a read and return the first column of the first row (None if none)."""
        with self.lock:
            row = self.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def get_meta(self, key: str) -> str | None:
        """A value from the store's ``meta`` table."""
        value = self.scalar("SELECT value FROM meta WHERE key = ?", (key,))
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        """Set a ``meta`` value (call inside a transaction)."""
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def purge_deleted_text(self) -> None:
        """Merge the FTS5 segments and empty the WAL after a delete (inside no transaction).

        ``secure_delete`` zeroes the rows and FTS5 ``secure-delete`` drops their terms; the
        merge rewrites every segment so no page of an older segment keeps a deleted term,
        and the checkpoint moves the zeroed pages into the file and truncates the WAL, whose
        older frames still held the pages as they were before the delete.
        """
        with self.transaction() as conn:
            conn.execute("INSERT INTO items_fts(items_fts) VALUES ('optimize')")
        with self.lock:
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``'s first row (``ok`` when healthy)."""
        return str(self.scalar("PRAGMA integrity_check"))

    def close(self) -> None:
        """Close the connections (idempotent)."""
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
        with self.lock:
            self.conn.close()
