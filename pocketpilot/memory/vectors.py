"""The vector side: sqlite-vec tables, quantisation, and the exact / bit + rerank search modes.

vec0 scans every row (no ANN index), so cost grows linearly with a user's store. Measured
here (FACTS.md, bench/bench_memory.py): float32 is exact and fine to ~20k items; int8 is no
faster than float32 in vec0; a binary (1 bit per dim) scan over-fetching 40+ candidates and
reranked exactly on the float vectors keeps ~0.99 recall@10 at a quarter of the cost. So a
store keeps two vec0 tables — float32 (exact search, reranking, MMR) and bit (coarse scan) —
and :class:`VectorIndex` picks the mode by the owner's item count.

Both tables partition by owner (a KNN never scans another owner's vectors) and carry ``tier``
and ``live`` metadata so tier filters and superseded history are applied inside the KNN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from ._db import Database

__all__ = ["AUTO_EXACT_MAX", "VectorIndex", "VectorMode", "int8_scale"]

VectorMode = Literal["auto", "exact", "bit_rerank"]
AUTO_EXACT_MAX = 20_000
"""In ``auto`` mode, owners with more vectors than this use bit scan + exact rerank."""
_MAX_K = 4096  # vec0's limit on k


def int8_scale(vectors: np.ndarray) -> np.ndarray:
    """Scale unit vectors to the full int8 range per vector (recall 0.997 vs 0.97 unscaled)."""
    peak = np.maximum(np.abs(vectors).max(axis=1, keepdims=True), 1e-12)
    return np.clip(np.rint(vectors / peak * 127.0), -127, 127).astype(np.int8)


class VectorIndex:
    """The vec0 tables of one store for one embedding dimension."""

    def __init__(self, db: Database, dim: int, mode: VectorMode = "auto") -> None:
        """Create the tables if missing (call after the schema migration)."""
        self._db = db
        self.dim = dim
        self.mode: VectorMode = mode
        with db.transaction() as conn:
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS items_vec USING vec0("
                f"rid INTEGER PRIMARY KEY, owner TEXT PARTITION KEY, tier TEXT, live INTEGER, "
                f"embedding float[{int(dim)}] distance_metric=cosine)"
            )
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS items_vbit USING vec0("
                f"rid INTEGER PRIMARY KEY, owner TEXT PARTITION KEY, tier TEXT, live INTEGER, "
                f"embedding bit[{int(dim)}])"
            )

    # ----------------------------------------------------------------- writes (inside a transaction)

    def add(self, rid: int, owner: str, tier: str, live: bool, vector: np.ndarray) -> None:
        """Insert one vector (call inside the store's write transaction)."""
        blob = np.ascontiguousarray(vector, dtype=np.float32).tobytes()
        conn = self._db.conn
        conn.execute(
            "INSERT INTO items_vec(rid, owner, tier, live, embedding) VALUES (?, ?, ?, ?, ?)",
            (rid, owner, tier, int(live), blob),
        )
        conn.execute(
            "INSERT INTO items_vbit(rid, owner, tier, live, embedding) "
            "VALUES (?, ?, ?, ?, vec_quantize_binary(?))",
            (rid, owner, tier, int(live), blob),
        )

    def update(self, rid: int, *, tier: str, live: bool) -> None:
        """Change the metadata of one vector (status or tier changed)."""
        for table in ("items_vec", "items_vbit"):
            self._db.conn.execute(f"UPDATE {table} SET tier = ?, live = ? WHERE rid = ?", (tier, int(live), rid))

    def delete(self, rids: Sequence[int]) -> None:
        """Remove vectors from both tables."""
        for table in ("items_vec", "items_vbit"):
            self._db.conn.executemany(f"DELETE FROM {table} WHERE rid = ?", [(r,) for r in rids])

    # ----------------------------------------------------------------- reads

    def vectors(self, rids: Sequence[int]) -> dict[int, np.ndarray]:
        """Float vectors of ``rids`` (those that have one)."""
        if not rids:
            return {}
        # One point lookup per rid: vec0 answers ``rid = ?`` from its rowid index but turns
        # ``rid IN (...)`` into a full scan (measured: +50 ms at 100k rows).
        out: dict[int, np.ndarray] = {}
        with self._db.lock:
            for rid in rids:
                row = self._db.conn.execute("SELECT embedding FROM items_vec WHERE rid = ?", (int(rid),)).fetchone()
                if row is not None:
                    out[int(rid)] = np.frombuffer(row[0], dtype=np.float32)
        return out

    def count(self, owner: str) -> int:
        """Live vectors of ``owner`` (what a scan has to read)."""
        return int(self._db.scalar("SELECT count(*) FROM items WHERE owner = ? AND has_vector = 1", (owner,)))

    def search(
        self,
        query: np.ndarray,
        owner: str,
        k: int,
        *,
        tiers: Sequence[str],
        live_only: bool = True,
        mode: VectorMode | None = None,
        owner_count: int | None = None,
    ) -> list[tuple[int, float]]:
        """Top-``k`` ``(rid, cosine similarity)`` of ``owner``'s vectors, best first."""
        mode = mode or self.mode
        if mode == "auto":
            n = owner_count if owner_count is not None else self.count(owner)
            mode = "exact" if n <= AUTO_EXACT_MAX else "bit_rerank"
        k = max(1, min(k, _MAX_K))
        blob = np.ascontiguousarray(query, dtype=np.float32).tobytes()
        marks = ",".join("?" * len(tiers))
        where = f"embedding MATCH {{q}} AND k = ? AND owner = ? AND tier IN ({marks})"
        params: list[object] = [blob, k, owner, *tiers]
        if live_only:
            where += " AND live = 1"
        if mode == "exact":
            rows = self._db.query(
                f"SELECT rid, distance FROM items_vec WHERE {where.format(q='?')} ORDER BY distance", params
            )
            return [(int(r), 1.0 - float(d)) for r, d in rows]
        # Coarse hamming scan, then exact cosine on the float vectors of the shortlist.
        params[1] = min(_MAX_K, max(4 * k, 40))
        rows = self._db.query(
            f"SELECT rid FROM items_vbit WHERE {where.format(q='vec_quantize_binary(?)')} ORDER BY distance",
            params,
        )
        shortlist = [int(r) for (r,) in rows]
        vecs = self.vectors(shortlist)
        if not vecs:
            return []
        ids = list(vecs)
        sims = np.stack([vecs[i] for i in ids]) @ np.asarray(query, dtype=np.float32)
        order = np.argsort(-sims)[:k]
        return [(ids[i], float(sims[i])) for i in order]
