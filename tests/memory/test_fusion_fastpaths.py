"""Convex score fusion, the keyword side's all-terms fast path, and the histogram top-m."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketpilot.memory import MemoryCandidate, MemoryContentError, Provenance, SqliteMemory
from pocketpilot.memory import store as store_mod
from pocketpilot.memory.fts import build_match_query
from pocketpilot.memory.fusion import FusionWeights, fuse
from pocketpilot.memory.vectors import nearest_by_distance

META = {rid: (1000.0, 0.5) for rid in range(1, 10)}
PLAIN = dict(rrf=1.0, recency=0.0, importance=0.0)


def test_convex_alpha_moves_between_pure_bm25_and_pure_cosine():
    keyword = [(1, 9.0), (2, 3.0)]
    vector = [(2, 0.9), (3, 0.8)]
    cos = {1: 0.1}
    only_bm25 = fuse(keyword, vector, META, 1000.0, FusionWeights(vector_share=0.0, **PLAIN), cos)
    assert [c.rid for c in only_bm25][:2] == [1, 2]
    only_cos = fuse(keyword, vector, META, 1000.0, FusionWeights(vector_share=1.0, **PLAIN), cos)
    assert [c.rid for c in only_cos] == [2, 3, 1]
    mixed = fuse(keyword, vector, META, 1000.0, FusionWeights(vector_share=0.5, **PLAIN), cos)
    # 2 is second on BM25 but first on cosine; 1 is first on BM25 but its cosine is poor.
    assert mixed[0].rid == 2 and mixed[0].rrf == pytest.approx(0.5 * 1.0 + 0.5 * 3.0 / 9.0)
    assert mixed[1].rid == 1 and mixed[1].rrf == pytest.approx(0.5 * 0.1 / 0.9 + 0.5 * 1.0)
    assert all(0.0 <= c.rrf <= 1.0 for c in mixed)


def test_convex_uses_the_looked_up_cosine_of_keyword_only_hits():
    keyword = [(1, 5.0), (2, 5.0)]
    vector = [(3, 0.5)]
    with_cos = fuse(keyword, vector, META, 1000.0, FusionWeights(vector_share=0.5, **PLAIN), {2: 0.5, 1: 0.0})
    assert with_cos[0].rid == 2  # equal BM25, but 2 is also close in meaning
    without = fuse(keyword, vector, META, 1000.0, FusionWeights(vector_share=0.5, **PLAIN))
    assert without[0].rrf == without[1].rrf  # no cosine known: the tie stays a tie


def test_convex_without_vectors_is_bm25_and_rrf_still_available():
    out = fuse([(4, 2.0), (5, 8.0)], [], META, 1000.0, FusionWeights(**PLAIN))
    assert [c.rid for c in out] == [5, 4] and out[0].rrf == 1.0
    rrf = fuse([4, 5], [(5, 0.9)], META, 1000.0, FusionWeights(method="rrf", **PLAIN))
    assert rrf[0].rid == 5  # in both lists


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=300), st.integers(1, 300))
def test_nearest_by_distance_is_a_top_m(dist, m):
    d = np.array(dist, dtype=np.uint16)
    m = min(m, len(d))
    idx = nearest_by_distance(d, m, 41)
    assert len(idx) == m and len(set(idx.tolist())) == m
    assert sorted(d[idx].tolist()) == sorted(d.tolist())[:m]


def put_all(store, caller, texts):
    store.write_many(caller, [MemoryCandidate(content=t, provenance=Provenance(source="episode")) for t in texts])


def test_all_terms_fast_path_ranks_only_full_matches_when_they_fill_the_pool(kw_store, svc, monkeypatch):
    full = [f"alpha bravo one two three four five six {i}" for i in range(60)]  # long rows, both terms
    partial = [f"bravo bravo bravo {i}" for i in range(10)]  # short rows, the rarer term thrice
    filler = [f"alpha {i}" for i in range(60)] + [f"zulu yankee {i}" for i in range(300)]
    put_all(kw_store, svc, full + partial + filler)
    # BM25 over the OR puts the short bravo-only rows first (tf and length beat a common alpha)...
    monkeypatch.setattr(store_mod, "CONJUNCTIVE_ABOVE", 10**9)
    exact = [h.item.content for h in kw_store.search(svc, "alpha bravo", k=10)]
    assert set(exact) & set(partial)
    # ...the fast path, triggered by a low threshold, ranks only rows holding both terms.
    monkeypatch.setattr(store_mod, "CONJUNCTIVE_ABOVE", 10)
    fast = [h.item.content for h in kw_store.search(svc, "alpha bravo", k=10)]
    assert len(fast) == 10 and all(c in full for c in fast)


def test_all_terms_fast_path_falls_back_to_or_when_too_few_rows_match_all(kw_store, svc, monkeypatch):
    put_all(kw_store, svc, [f"alpha only {i}" for i in range(80)] + ["alpha bravo together"])
    monkeypatch.setattr(store_mod, "CONJUNCTIVE_ABOVE", 10)
    hits = [h.item.content for h in kw_store.search(svc, "alpha bravo", k=20)]
    assert hits[0] == "alpha bravo together" and len(hits) == 20  # OR results fill the rest


def test_match_query_operators():
    assert build_match_query("sister's birthday", "AND") == '"sister" AND "birthday"'
    with pytest.raises(ValueError):
        build_match_query("x", "NEAR")  # type: ignore[arg-type]


def test_parallel_keyword_worker_gives_the_same_results(store, svc, monkeypatch):
    put_all(store, svc, [f"reminder {i}: {w} at the {p}" for i, (w, p) in enumerate(
        [("dentist", "clinic"), ("gym", "park"), ("pickup", "school"), ("parcel", "post office")] * 5)])
    queries = ["dentist clinic", "where do I collect the kids", "post office parcel", "gym"]
    store.overlap = "never"
    sequential = [[h.item.id for h in store.search(svc, q, k=5)] for q in queries]
    assert store._keyword_pool is None
    store.overlap = "always"
    parallel = [[h.item.id for h in store.search(svc, q, k=5)] for q in queries]
    assert parallel == sequential and all(len(ids) == 5 for ids in sequential)
    assert store._keyword_pool is not None  # the worker really ran


def test_auto_overlap_needs_a_big_owner_and_an_idle_core(store, svc, monkeypatch):
    put_all(store, svc, ["dentist at the clinic", "gym in the park"])
    store.search(svc, "dentist", k=1)  # loads the owner's codes
    monkeypatch.setattr(store_mod, "_idle_core", lambda: True)
    monkeypatch.setattr(store_mod, "PARALLEL_ABOVE", 10**9)
    assert not store._overlaps("alice")  # a small owner: sequential
    monkeypatch.setattr(store_mod, "PARALLEL_ABOVE", 1)
    assert store._overlaps("alice")
    monkeypatch.setattr(store_mod, "_idle_core", lambda: False)
    assert not store._overlaps("alice")  # busy cores: the worker would only wait for one
    store.overlap = "always"
    assert store._overlaps("alice")
    with pytest.raises(MemoryContentError, match="overlap"):
        SqliteMemory(":memory:", store._access, overlap="sometimes")  # type: ignore[arg-type]
