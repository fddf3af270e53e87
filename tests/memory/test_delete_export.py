from __future__ import annotations

import json

import apsw
import numpy as np
import pytest

from pocketpilot.contracts import Episode, EpisodeHeader, PlannerInfo, RetrievedMemory, Step
from pocketpilot.errors import MemoryNotFoundError
from pocketpilot.memory import MemoryCandidate, Provenance, scrub_episode
from pocketpilot.memory.export import export_jsonl


def cand(content):
    return MemoryCandidate(content=content, provenance=Provenance(source="user_statement"))


def _index_counts(path, rid):
    conn = apsw.Connection(str(path))
    import sqlite_vec

    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    fts = conn.execute("SELECT count(*) FROM items_fts WHERE items_fts MATCH '\"zanzibar\"'").fetchone()[0]
    vec = conn.execute("SELECT count(*) FROM items_emb WHERE rid = ?", (rid,)).fetchone()[0]
    vbit = conn.execute("SELECT count(*) FROM items_bits WHERE rid = ?", (rid,)).fetchone()[0]
    base = conn.execute("SELECT count(*) FROM items WHERE rid = ?", (rid,)).fetchone()[0]
    conn.close()
    return base, fts, vec, vbit


def test_delete_reaches_every_index_and_export(store, svc, alice, tmp_path):
    keep = store.write(svc, cand("Trip to Lisbon in May")).id
    gone = store.write(svc, cand("Holiday in Zanzibar with the kids")).id
    rid = store._db.scalar("SELECT rid FROM items WHERE id = ?", (gone,))
    assert _index_counts(store.path, rid) == (1, 1, 1, 1)
    assert store.delete(alice, [gone]) == 1
    assert _index_counts(store.path, rid) == (0, 0, 0, 0)
    for q in ("Zanzibar", "holiday with the children on an island"):
        assert gone not in [h.item.id for h in store.search(svc, q, k=10)]
    with pytest.raises(MemoryNotFoundError):
        store.get(alice, gone)
    assert store.deleted_ids(alice) == {gone}
    out = tmp_path / "export.jsonl"
    assert export_jsonl(store, alice, out) == 1
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in lines] == [keep] and "Zanzibar" not in out.read_text()


def test_delete_unknown_id_deletes_nothing(kw_store, svc, alice):
    a = kw_store.write(svc, cand("first")).id
    with pytest.raises(MemoryNotFoundError):
        kw_store.delete(alice, [a, "missing"])
    assert kw_store.get(alice, a)


def test_delete_all(kw_store, svc, svc_bob, alice, bob):
    for i in range(3):
        kw_store.write(svc, cand(f"alice {i}"))
    kw_store.write(svc_bob, cand("bob's"))
    assert kw_store.delete_all(alice) == 3
    assert kw_store.list_items(alice) == [] and len(kw_store.list_items(bob)) == 1


def test_scrub_episode_omits_deleted_memories():
    header = EpisodeHeader(episode_id="e", request="r", planner=PlannerInfo(backend="b", model="m"))
    mems = [RetrievedMemory(id=i, tier="episodic", content=i, score=1.0) for i in ("a", "b")]
    child = Episode(header=header, steps=[Step(index=0, context_digest="c", retrieved=mems)])
    ep = Episode(header=header, steps=[Step(index=0, context_digest="d", retrieved=mems, children=[child])])
    out = scrub_episode(ep, {"a"})
    assert [m.id for m in out.steps[0].retrieved] == ["b"]
    assert [m.id for m in out.steps[0].children[0].steps[0].retrieved] == ["b"]
    assert "\"a\"" not in out.model_dump_json().replace('"id":"b"', "")


def test_vectors_are_unit(store, svc):
    ids = [store.write(svc, cand(t)).id for t in ("one thing", "another thing")]
    vecs = store.item_vectors(svc, ids)
    assert set(vecs) == set(ids)
    assert all(abs(float(np.linalg.norm(v)) - 1) < 1e-3 for v in vecs.values())
