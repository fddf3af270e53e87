from __future__ import annotations

import pytest

from pocketpilot.memory import MemoryCandidate, Provenance, SqliteMemory

HOSTILE = ["my sister's birthday", "foo: bar", '"', "AND OR NOT", "NEAR(a b)", "col:val^2 -x +y",
           "🎂 birthday 🎉", "'; DROP TABLE items; --", "\x00birthday", "a" * 100_000, "birthday " * 20_000,
           "   ", "\u202e\u200b", "生日 birthday"]
ADVERSARIAL = [("My bank PIN is 4921", "My bank PIN is 8810"),
               ("My sister Maria's birthday is March 3", "My sister Maria's birthday is March 4"),
               ("Home address: 12 Oak Street", "Home address: 14 Oak Street")]


def cand(content, tier="episodic"):
    return MemoryCandidate(content=content, tier=tier, provenance=Provenance(source="user_statement"))


@pytest.fixture
def bit_store(tmp_path, policy, embedder):
    # bit scan + rerank at any size: the path large stores take
    store = SqliteMemory(tmp_path / "bit.db", policy, embedder=embedder, vector_mode="bit_rerank")
    yield store
    store.close()


def test_hostile_queries_never_break_hybrid_search(bit_store, svc):
    bit_store.write(svc, cand("My sister's birthday is March 3"))
    for query in HOSTILE:
        for mode in ("hybrid", "keyword", "vector"):
            hits = bit_store.search(svc, query, k=5, mode=mode)
            assert isinstance(hits, list)
            if "birthday" in query and mode != "vector":
                assert hits and "birthday" in hits[0].item.content, (query, mode)
    assert len(bit_store.list_items(svc)) == 1


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "vector"])
def test_no_cross_owner_leakage_in_bit_scan(bit_store, svc, svc_bob, mode):
    for mine, theirs in ADVERSARIAL:
        bit_store.write(svc, cand(mine, tier="user"))
        # bob has many near-identical items, so they dominate any unfiltered scan
        bit_store.write_many(svc_bob, [cand(f"{theirs} (copy {i})", tier="user") for i in range(30)])
    bob = {h.item.content for h in bit_store.search(svc_bob, "bank PIN", k=50, mode=mode)}
    assert bob and all("(copy" in c for c in bob)
    for query in ("bank PIN", "PIN 8810", "sister Maria birthday March 4", "14 Oak Street", "copy"):
        for k in (1, 10, 50):
            hits = bit_store.search(svc, query, k=k, mode=mode)
            if query != "copy":  # alice's own fact answers the others: an empty answer would prove nothing
                assert hits, (query, k)
            assert all(h.item.owner == "alice" and "(copy" not in h.item.content for h in hits)
