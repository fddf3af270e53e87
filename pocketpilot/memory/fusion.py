"""Ranking after retrieval: BM25 + cosine fusion, recency and importance, then MMR diversity.

Two fusion functions. ``convex`` (the default) mixes the two scores after scaling each by
the best score of its list (theoretical minimum 0): alpha * cosine + (1 - alpha) * BM25.
Bruch et al. ("An Analysis of Fusion Functions for Hybrid Retrieval", 2023) found such a
convex combination beats reciprocal-rank fusion once alpha is tuned on held-out queries,
because ranks throw away how far apart the scores are; on the BFCL memory questions RRF lost
to BM25 alone at recall@1 (bench/bench_memory_bfcl.py). ``rrf`` needs no calibration and is
kept for stores whose score distributions are unknown. Every candidate of either list gets
its real cosine when the store can supply it (keyword-only hits are looked up), so a
paraphrase the BM25 side missed and an exact token the vector side ranked low are both
scored on both signals. Recency and importance then break near-ties; MMR drops
near-duplicates so k results say k different things.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

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
    method: Literal["convex", "rrf"] = "convex"
    """How the two lists become one relevance score (module docstring)."""
    vector_share: float = 0.7
    """alpha of the convex fusion: the cosine's share of the relevance, BM25 gets the rest."""
    min_cosine: float = 0.15
    """Vector hits below this similarity are noise (a scan always returns k rows) and are dropped."""
    keyword_weight: float = 1.0
    """Weight of the BM25 list's reciprocal ranks."""
    vector_weight: float = 0.75
    """Weight of the vector list's reciprocal ranks (``rrf`` only).

    ``method``, ``vector_share``, this and ``mmr_lambda`` were chosen on the dev half of the BFCL v4 memory questions
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
    """The fused relevance in [0, 1] (named for the original fusion; ``convex`` fills it too)."""
    recency: float = 0.0
    bm25: float | None = None


def fuse(
    keyword: Sequence[int] | Sequence[tuple[int, float]],
    vector: Sequence[tuple[int, float]],
    meta: dict[int, tuple[float, float]],
    now: float,
    weights: FusionWeights,
    cosines: dict[int, float] | None = None,
) -> list[Candidate]:
    """Fuse ranked rid lists into scored candidates, best first.

    Args:
        keyword: rids ranked by BM25, best first, or ``(rid, bm25 score)`` pairs (higher is
            better); ``convex`` fusion without scores falls back to ``1 / rank``.
        vector: ``(rid, cosine)`` ranked by similarity.
        meta: ``rid -> (created_at epoch seconds, importance)`` for every rid above.
        now: Epoch seconds for recency.
        weights: Signal weights.
        cosines: Cosine similarity of candidates outside ``vector`` (keyword-only hits), so
            ``convex`` fusion can score them on both signals.
    """
    cands: dict[int, Candidate] = {}
    for rank, entry in enumerate(keyword, start=1):
        rid, bm25 = entry if isinstance(entry, tuple) else (entry, 1.0 / rank)
        c = cands.setdefault(int(rid), Candidate(int(rid)))
        c.bm25_rank, c.bm25 = rank, float(bm25)
    for rank, (rid, cos) in enumerate(vector, start=1):
        c = cands.setdefault(rid, Candidate(rid))
        c.vector_rank, c.cosine = rank, cos
    for rid, cos in (cosines or {}).items():
        if rid in cands and cands[rid].cosine is None:
            cands[rid].cosine = float(cos)
    relevance = _convex(cands, weights, bool(vector)) if weights.method == "convex" else _rrf(cands, weights)
    decay = math.log(2) / (weights.recency_half_life_days * 86400.0)
    out = []
    for c in cands.values():
        if c.rid not in meta:
            continue  # filtered out (tier, category, time) after the rank lists were made
        c.created_at, c.importance = meta[c.rid]
        c.rrf = relevance[c.rid]
        c.recency = math.exp(-decay * max(0.0, now - c.created_at))
        c.score = weights.rrf * c.rrf + weights.recency * c.recency + weights.importance * c.importance
        out.append(c)
    out.sort(key=lambda c: c.score, reverse=True)
    return out


def _rrf(cands: dict[int, Candidate], weights: FusionWeights) -> dict[int, float]:
    wk, wv = weights.keyword_weight, weights.vector_weight
    has_k = any(c.bm25_rank is not None for c in cands.values())
    has_v = any(c.vector_rank is not None for c in cands.values())
    best = (wk * has_k + wv * has_v) / (RRF_K + 1) or 1.0
    return {
        c.rid: sum(w / (RRF_K + r) for w, r in ((wk, c.bm25_rank), (wv, c.vector_rank)) if r is not None) / best
        for c in cands.values()
    }


def _convex(cands: dict[int, Candidate], weights: FusionWeights, has_vector: bool) -> dict[int, float]:
    top_bm25 = max((c.bm25 for c in cands.values() if c.bm25 is not None), default=0.0)
    top_cos = max((c.cosine for c in cands.values() if c.cosine is not None), default=0.0)
    alpha = weights.vector_share if has_vector and top_cos > 0 else 0.0
    if top_bm25 <= 0:
        alpha = 1.0 if has_vector else 0.0
    out = {}
    for c in cands.values():
        kw = (c.bm25 or 0.0) / top_bm25 if top_bm25 > 0 else 0.0
        vec = max(0.0, c.cosine or 0.0) / top_cos if top_cos > 0 else 0.0
        out[c.rid] = alpha * vec + (1.0 - alpha) * kw
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
