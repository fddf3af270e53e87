from __future__ import annotations

import apsw
import pytest

from pocketpilot.errors import MemorySchemaError
from pocketpilot.memory import MemoryCandidate, MemoryFileError, Provenance, SqliteMemory
from pocketpilot.memory._db import APPLICATION_ID, SCHEMA_VERSION


def test_fresh_store_is_wal_versioned_and_marked(tmp_path, policy):
    SqliteMemory(tmp_path / "m.db", policy).close()
    conn = apsw.Connection(str(tmp_path / "m.db"))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_newer_schema_refused_and_file_untouched(tmp_path, policy, svc):
    path = tmp_path / "m.db"
    store = SqliteMemory(path, policy)
    store.write(svc, MemoryCandidate(content="keep", provenance=Provenance(source="episode")))
    store.close()
    conn = apsw.Connection(str(path))
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(MemorySchemaError, match="newer"):
        SqliteMemory(path, policy)
    conn = apsw.Connection(str(path))
    assert conn.execute("SELECT content FROM items").fetchall() == [("keep",)]


def test_corrupt_file(tmp_path, policy):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database" * 500)
    with pytest.raises(MemoryFileError):
        SqliteMemory(path, policy)
    assert path.read_bytes().startswith(b"this is not a database")


def test_foreign_database_refused(tmp_path, policy):
    path = tmp_path / "other.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE t(x)")
    conn.close()
    with pytest.raises(MemoryFileError, match="not a pocketpilot store"):
        SqliteMemory(path, policy)


def test_embedder_mismatch_refused(tmp_path, policy, embedder):
    path = tmp_path / "m.db"
    SqliteMemory(path, policy, embedder=embedder).close()

    class Other:
        name, dim = "other-model/x", 8

        def embed(self, texts):  # pragma: no cover - never called
            raise AssertionError

    with pytest.raises(MemorySchemaError, match="vectors were made by"):
        SqliteMemory(path, policy, embedder=Other())


def test_keyword_only_items_get_vectors_later(tmp_path, policy, svc, embedder):
    path = tmp_path / "m.db"
    with SqliteMemory(path, policy) as kw:
        kw.write(svc, MemoryCandidate(content="the garage door code", provenance=Provenance(source="episode")))
        assert not kw.list_items(svc)[0].has_vector
    with SqliteMemory(path, policy, embedder=embedder) as vec:
        assert vec.list_items(svc)[0].has_vector
        hits = vec.search(svc, "how do I open the garage")
        assert hits and "vector_rank" in hits[0].scores


def test_several_stores_open_at_once(tmp_path, policy, svc, svc_bob):
    stores = [SqliteMemory(tmp_path / f"s{i}.db", policy) for i in range(3)]
    for i, s in enumerate(stores):
        s.write(svc, MemoryCandidate(content=f"note number {i}", provenance=Provenance(source="episode")))
    assert [s.search(svc, "note")[0].item.content for s in stores] == [f"note number {i}" for i in range(3)]
    for s in stores:
        s.close()
