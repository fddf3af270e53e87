"""Ranking after retrieval: reciprocal-rank fusion, recency and importance, then MMR diversity.

Reciprocal-rank fusion needs no score calibration between BM25 and cosine (their scales are
unrelated); recency and importance then break near-ties; MMR drops near-duplicates so k
results say k different things.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Candidate", "FusionWeights", "fuse", "mmr"]

RRF_K = 60


@dataclass(frozen=True)
class FusionWeights:
    """How much each signal counts in the fused score (RRF normalised to [0, 1])."""

    rrf: float = 0.8
    recency: float = 0.1
    importance: float = 0.1
    recency_half_life_days: float = 30.0
    mmr_lambda: float = 0.9
    """1.0 = pure relevance; lower values favour diversity."""
    min_cosine: float = 0.15
    """Vector hits below this similarity are noise (a scan always returns k rows) and are dropped."""
    keyword_weight: float = 1.0
    """Weight of the BM25 list's reciprocal ranks."""
    vector_weight: float = 0.75
    """Weight of the vector list's reciprocal ranks.

    This and ``mmr_lambda`` were chosen on the dev half of the BFCL v4 memory questions
    (bench/bench_memory_bfcl.py --tune); the other half is reported separately.
    """


@dataclass
class Candidate:
    """One item on its way through fusion."""

    rid: int
    bm25_rank: int | None = None
    vector_rank: int | None = None
    cosine: float | None = None
    created_at: float = 0.0
    importance: float = 0.5
    score: float = 0.0
    rrf: float = 0.0
    recency: float = 0.0


def fuse(
    keyword: Sequence[int],
    vector: Sequence[tuple[int, float]],
    meta: dict[int, tuple[float, float]],
    now: float,
    weights: FusionWeights,
) -> list[Candidate]:
    """Fuse ranked rid lists into scored candidates, best first.

    Args:
        keyword: rids ranked by BM25.
        vector: ``(rid, cosine)`` ranked by similarity.
        meta: ``rid -> (created_at epoch seconds, importance)`` for every rid above.
        now: Epoch seconds for recency.
        weights: Signal weights.
    """
    cands: dict[int, Candidate] = {}
    for rank, rid in enumerate(keyword, start=1):
        cands.setdefault(rid, Candidate(rid)).bm25_rank = rank
    for rank, (rid, cos) in enumerate(vector, start=1):
        c = cands.setdefault(rid, Candidate(rid))
        c.vector_rank, c.cosine = rank, cos
    wk, wv = weights.keyword_weight, weights.vector_weight
    best = (wk * bool(keyword) + wv * bool(vector)) / (RRF_K + 1) or 1.0
    decay = math.log(2) / (weights.recency_half_life_days * 86400.0)
    out = []
    for c in cands.values():
        if c.rid not in meta:
            continue  # filtered out (tier, category, time) after the rank lists were made
        c.created_at, c.importance = meta[c.rid]
        raw = sum(w / (RRF_K + r) for w, r in ((wk, c.bm25_rank), (wv, c.vector_rank)) if r is not None)
        c.rrf = raw / best
        c.recency = math.exp(-decay * max(0.0, now - c.created_at))
        c.score = weights.rrf * c.rrf + weights.recency * c.recency + weights.importance * c.importance
        out.append(c)
    out.sort(key=lambda c: c.score, reverse=True)
    return out


_WORD = re.compile(r"\w+")


def _jaccard_sim(texts: dict[int, str]) -> Callable[[int, int], float]:
    sets = {rid: frozenset(_WORD.findall(t.lower())) for rid, t in texts.items()}

    def sim(a: int, b: int) -> float:
        x, y = sets[a], sets[b]
        return len(x & y) / len(x | y) if x and y else 0.0

    return sim


def mmr(
    ranked: list[Candidate],
    k: int,
    lam: float,
    vectors: dict[int, np.ndarray] | None = None,
    texts: dict[int, str] | None = None,
) -> list[tuple[Candidate, float]]:
    """Maximal marginal relevance: pick ``k`` items trading relevance against redundancy.

    Similarity is cosine on the stored vectors where both items have one, else word Jaccard.
    Each item's redundancy (its highest similarity to anything picked) is updated once per
    pick with one matrix-vector product, so the cost is O(k * n), not O(k^2 * n) Python calls.
    Returns ``(candidate, mmr score)`` in pick order.
    """
    if not ranked:
        return []
    vectors = vectors or {}
    jaccard = _jaccard_sim(texts or {c.rid: "" for c in ranked})
    top = ranked[0].score or 1.0
    n = len(ranked)
    rel = np.array([lam * (c.score / top) for c in ranked])
    has_vec = np.array([c.rid in vectors for c in ranked])
    dim = next((len(v) for v in vectors.values()), 0)
    mat = np.zeros((n, dim), dtype=np.float32)
    for i, c in enumerate(ranked):
        if has_vec[i]:
            mat[i] = vectors[c.rid]
    redundancy = np.full(n, -np.inf)
    free = np.ones(n, dtype=bool)
    picked: list[tuple[Candidate, float]] = []
    while free.any() and len(picked) < k:
        penalty = (1.0 - lam) * redundancy if picked else 0.0
        val = np.where(free, rel - penalty, -np.inf)
        best = int(np.argmax(val))
        picked.append((ranked[best], float(val[best])))
        free[best] = False
        sims = mat @ mat[best] if has_vec[best] else np.zeros(n)
        for i in np.flatnonzero(free & ~(has_vec & has_vec[best])):
            sims[i] = jaccard(ranked[i].rid, ranked[best].rid)
        redundancy = np.maximum(redundancy, sims)
    return picked
