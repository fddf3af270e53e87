"""The vector side: float vectors and sign bits in the store file, a hamming scan in RAM, exact rerank.

No ANN index: a query scans every vector of its owner, so cost grows linearly with the
owner's store. What we measured (bench/bench_memory.py, FACTS.md), deciding the layout:

- A scan over 1-bit-per-dimension codes, over-fetching 4x the wanted rows (at least 40) and
  reranked by exact cosine on the float vectors. The store asks for a pool of 50, so 200 rows
  are reranked: 3.3 ms at 100k, where numpy's float matmul over the same vectors in RAM takes
  14.7 ms (bench_memory.py, one run, shared machine). Its recall of the exact top-10 depends
  on the data: 0.97 at 10k and 0.77 at 100k on the benchmark's synthetic vectors, which are
  dense clusters of near-duplicates (mixes of 3,000 real embeddings with sigma-0.02 noise)
  that 1-bit codes cannot order; the fused ranking then leans on BM25 and MMR as well.
- sqlite-vec's ``vec0`` KNN over the same 100k vectors, in the same run: bit 7.1 ms (3.9x the
  numpy bit scan, and without a rerank), float 106 ms, int8 128 ms. The codes of 100k vectors
  are 4.8 MB, so each owner's codes are loaded once into RAM and the scan is numpy; sqlite-vec
  still defines the bit layout (``vec_quantize_binary``, used by the schema migration).
- A float vec0 table answers point lookups one statement at a time and turns ``rid IN (…)``
  into a full scan, so the rerank shortlist comes from an ordinary table in one statement.
- The rerank itself reads from RAM for owners up to :data:`RAM_RERANK_MAX` vectors: an int8
  copy of each vector (per-vector scaled, :func:`int8_scale`: 384 bytes, 38 MB at 100k) sits
  next to the codes. Fetching the 200 float rows of a shortlist from SQLite was a third of the
  vector side's time, and the keyword-only hits' cosines cost a second fetch; from RAM both are
  a gather and a small matmul. The int8 cosine orders the shortlist as the float one does to
  within quantisation noise (recall of the float rerank's top-10 is measured by the bench).
  Larger owners fetch the float rows as before, so RAM stays bounded.

Storage (schema 2, :mod:`._db`): ``items_emb(rid, embedding)`` float32, and
``items_bits(owner, rid, tier, live, bits)`` clustered by owner. sqlite-vec's
``vec_quantize_binary`` defines the bit layout (bit i of byte j = dimension 8j + i > 0);
:func:`sign_bits` is its numpy twin.

The RAM copy stays coherent with other connections and processes: ``PRAGMA data_version``
says whether anyone else committed, a ``meta`` generation counter (bumped by every update and
delete, in the same transaction) says whether rows changed or went away — then the owner's
codes reload — and otherwise only rows with a higher rid than any loaded are read. Every
result is re-filtered against ``items`` by the store anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ._db import Database
from .models import TIERS

__all__ = [
    "AUTO_EXACT_MAX", "RAM_RERANK_MAX", "RERANK_FACTOR", "VectorIndex", "VectorMode", "int8_scale",
    "nearest_by_distance", "sign_bits",
]

VectorMode = Literal["auto", "exact", "bit_rerank"]
AUTO_EXACT_MAX = 2_000
"""In ``auto`` mode, owners with more vectors than this use the bit scan + exact rerank."""
RERANK_FACTOR = 4
"""The bit scan shortlists this many times the wanted rows (at least 40) for the exact rerank."""
RAM_RERANK_MAX = 250_000
"""Owners with at most this many vectors keep an int8 copy in RAM for the rerank (96 MB at the cap)."""
_IN_CHUNK = 500  # bound parameters per IN (...) statement
_LOAD_CHUNK = 10_000  # rows per statement when loading the int8 copy (bounds the load's peak RAM)
_TIER_CODE = {t: i for i, t in enumerate(TIERS)}


def int8_scale(vectors: np.ndarray) -> np.ndarray:
    """Scale unit vectors to the full int8 range per vector (recall 0.997 vs 0.97 unscaled)."""
    peak = np.maximum(np.abs(vectors).max(axis=1, keepdims=True), 1e-12)
    return np.clip(np.rint(vectors / peak * 127.0), -127, 127).astype(np.int8)


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """1-bit codes of ``(n, dim)`` vectors, byte for byte what ``vec_quantize_binary`` returns."""
    return np.packbits(np.asarray(vectors) > 0, axis=-1, bitorder="little")


@dataclass
class _OwnerCodes:
    """One owner's codes in RAM, with what they were loaded against."""

    rids: np.ndarray  # int64 (n,)
    words: np.ndarray  # uint64 or uint8 (w, n): one contiguous row per code word, so the scan is w flat passes
    tiers: np.ndarray  # uint8 (n,)
    live: np.ndarray  # bool (n,)
    max_rid: int
    generation: int
    seen: tuple[int, int]  # (PRAGMA data_version, local write count) at the last refresh
    i8: np.ndarray | None = None  # int8 (n, dim): the rerank copy (None above RAM_RERANK_MAX)
    inv_norm: np.ndarray | None = None  # float32 (n,): 1 / |i8 row|, so i8 @ q * inv_norm is a cosine
    masks: dict[tuple[tuple[str, ...], bool], np.ndarray] = field(default_factory=dict)

    def positions(self, rids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Row positions of those ``rids`` held here, and the rids found (rids are sorted ascending)."""
        want = np.asarray(rids, dtype=np.int64)
        pos = np.searchsorted(self.rids, want)
        pos = np.minimum(pos, len(self.rids) - 1)
        found = self.rids[pos] == want if len(self.rids) else np.zeros(len(want), dtype=bool)
        return pos[found], want[found]

    def unit_rows(self, pos: np.ndarray) -> np.ndarray:
        """The int8 rows at ``pos`` as float32 unit vectors."""
        assert self.i8 is not None and self.inv_norm is not None
        return self.i8[pos].astype(np.float32) * self.inv_norm[pos, None]

    def mask(self, tiers: Sequence[str], live_only: bool) -> np.ndarray:
        """Rows in ``tiers`` (and live), cached per filter until the codes change."""
        key = (tuple(tiers), live_only)
        if key not in self.masks:
            codes = np.array([_TIER_CODE[t] for t in tiers if t in _TIER_CODE], dtype=np.uint8)
            keep = np.isin(self.tiers, codes)
            self.masks[key] = keep & self.live if live_only else keep
        return self.masks[key]

    def hamming(self, qwords: np.ndarray) -> np.ndarray:
        """Hamming distance of every row to the query's code words (uint16).

        One XOR and one popcount per code word into preallocated buffers: the scan stays a
        few flat passes over RAM with no temporaries the size of the store.
        """
        n = self.words.shape[1]
        xor, count = np.empty(n, dtype=self.words.dtype), np.empty(n, dtype=np.uint8)
        dist = np.zeros(n, dtype=np.uint16)
        for j in range(len(qwords)):
            np.bitwise_xor(self.words[j], qwords[j], out=xor)
            np.bitwise_count(xor, out=count)
            np.add(dist, count, out=dist)
        return dist


def nearest_by_distance(dist: np.ndarray, m: int, max_dist: int) -> np.ndarray:
    """Indices of ``m`` smallest entries of small non-negative integer distances, unordered.

    A histogram of the distances (at most ``max_dist + 1`` buckets) gives the cut-off in one
    pass, which beats ``argpartition`` several times over on 100k rows; ties at the cut-off
    are taken in index order.
    """
    cum = np.cumsum(np.bincount(dist, minlength=max_dist + 1))
    cut = int(np.searchsorted(cum, m))  # the first distance whose cumulative count reaches m
    below = np.flatnonzero(dist < cut)
    at = np.flatnonzero(dist == cut)[: m - len(below)]
    return np.concatenate([below, at])


class VectorIndex:
    """The vector tables of one store for one embedding dimension, plus the in-RAM codes."""

    def __init__(self, db: Database, dim: int, mode: VectorMode = "auto") -> None:
        """Bind to a migrated store (schema 2 created the tables)."""
        self._db = db
        self.dim = dim
        self.mode: VectorMode = mode
        self._word = np.uint64 if dim % 64 == 0 else np.uint8
        self._codes: dict[str, _OwnerCodes] = {}
        self._writes = 0  # this connection's vector writes; data_version only counts other connections'
        self._lock = threading.RLock()

    # ----------------------------------------------------------------- writes (inside a transaction)

    def add(self, rid: int, owner: str, tier: str, live: bool, vector: np.ndarray) -> None:
        """Insert one vector (call inside the store's write transaction)."""
        self.add_many([(rid, owner, tier, live, vector)])

    def add_many(self, rows: Sequence[tuple[int, str, str, bool, np.ndarray]]) -> None:
        """Insert ``(rid, owner, tier, live, vector)`` rows, two statements in all (inside a transaction)."""
        if not rows:
            return
        vecs = np.ascontiguousarray(np.stack([r[4] for r in rows]), dtype=np.float32)
        bits = sign_bits(vecs)
        conn = self._db.conn
        conn.executemany("INSERT INTO items_emb(rid, embedding) VALUES (?, ?)",
                         [(int(r[0]), vecs[i].tobytes()) for i, r in enumerate(rows)])
        conn.executemany("INSERT INTO items_bits(owner, rid, tier, live, bits) VALUES (?, ?, ?, ?, ?)",
                         [(r[1], int(r[0]), r[2], int(r[3]), bits[i].tobytes()) for i, r in enumerate(rows)])
        self._writes += 1

    def update(self, rid: int, *, tier: str, live: bool) -> None:
        """Change the metadata of one vector (status or tier changed)."""
        self._db.conn.execute("UPDATE items_bits SET tier = ?, live = ? WHERE rid = ?", (tier, int(live), rid))
        self._bump()

    def delete(self, rids: Sequence[int]) -> None:
        """Remove vectors from both tables."""
        ids = [(int(r),) for r in rids]
        self._db.conn.executemany("DELETE FROM items_emb WHERE rid = ?", ids)
        self._db.conn.executemany("DELETE FROM items_bits WHERE rid = ?", ids)
        self._bump()

    def _bump(self) -> None:
        self._db.conn.execute(
            "INSERT INTO meta(key, value) VALUES ('vec_generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )
        self._writes += 1

    # ----------------------------------------------------------------- reads

    def vectors(self, rids: Sequence[int], owner: str | None = None) -> dict[int, np.ndarray]:
        """Float vectors of ``rids`` (those that have one), fetched in one statement per 500.

        Given the ``owner`` whose codes are loaded with their int8 copy, rows held there come
        from RAM (unit vectors dequantised from int8) and only the rest from the store.
        """
        out: dict[int, np.ndarray] = {}
        ids = [int(r) for r in dict.fromkeys(rids)]
        codes = self._codes.get(owner) if owner is not None else None
        if codes is not None and codes.i8 is not None and ids:
            pos, found = codes.positions(ids)
            out = dict(zip(found.tolist(), codes.unit_rows(pos), strict=True))
            ids = [r for r in ids if r not in out]
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            rows = self._db.query(
                f"SELECT rid, embedding FROM items_emb WHERE rid IN ({','.join('?' * len(chunk))})", chunk
            )
            for rid, blob in rows:
                out[int(rid)] = np.frombuffer(blob, dtype=np.float32)
        return out

    def loaded(self, owner: str) -> int:
        """Vectors of ``owner`` held in RAM as of the last scan (0 before the first); no I/O."""
        codes = self._codes.get(owner)
        return 0 if codes is None else len(codes.rids)

    def count(self, owner: str) -> int:
        """Vectors of ``owner`` (what a scan has to read)."""
        return int(self._db.scalar("SELECT count(*) FROM items_bits WHERE owner = ?", (owner,)))

    def _codes_for(self, owner: str) -> _OwnerCodes:
        """The owner's codes, refreshed if anything committed since they were read."""
        with self._db.lock, self._lock:
            seen = (int(self._db.scalar("PRAGMA data_version")), self._writes)
            codes = self._codes.get(owner)
            if codes is not None and codes.seen == seen:
                return codes
            generation = int(self._db.scalar("SELECT value FROM meta WHERE key = 'vec_generation'") or 0)
            if codes is None or codes.generation != generation:
                old = codes
                codes = self._load(owner, -1, generation, seen)
                self._load_i8(owner, codes, old)
            else:
                new = self._load(owner, codes.max_rid, generation, seen)
                old = codes
                codes = _OwnerCodes(
                    np.concatenate([old.rids, new.rids]), np.concatenate([old.words, new.words], axis=1),
                    np.concatenate([old.tiers, new.tiers]), np.concatenate([old.live, new.live]),
                    max(old.max_rid, new.max_rid), generation, seen,
                )
                self._load_i8(owner, codes, old)
            self._codes[owner] = codes
            return codes

    def _load_i8(self, owner: str, codes: _OwnerCodes, old: _OwnerCodes | None) -> None:
        """Give ``codes`` its int8 rerank copy, reusing ``old``'s rows and reading only the others.

        A generation change (an update or delete anywhere) reloads the codes, but the vectors
        of surviving rows never change, so they are carried over; a first load reads the
        owner's float rows in chunks of :data:`_LOAD_CHUNK`. Nothing for owners above
        :data:`RAM_RERANK_MAX` (their rerank reads float rows).
        """
        n = len(codes.rids)
        if n == 0 or n > RAM_RERANK_MAX:
            return
        i8 = np.empty((n, self.dim), dtype=np.int8)
        have = np.zeros(n, dtype=bool)
        if old is not None and old.i8 is not None:
            pos_old, found = old.positions(codes.rids)
            at = np.searchsorted(codes.rids, found)
            i8[at], have[at] = old.i8[pos_old], True
        missing = codes.rids[~have]
        if len(missing) > _LOAD_CHUNK // 2:
            after = int(missing[0]) - 1
            while True:  # one range scan over the owner's rows, in chunks
                rows = self._db.query(
                    "SELECT e.rid, e.embedding FROM items_bits b JOIN items_emb e ON e.rid = b.rid "
                    "WHERE b.owner = ? AND b.rid > ? ORDER BY b.rid LIMIT ?", (owner, after, _LOAD_CHUNK),
                )
                if not rows:
                    break
                self._fill_i8(codes, i8, have, rows)
                after = int(rows[-1][0])
        else:
            ids = missing.tolist()
            for start in range(0, len(ids), _IN_CHUNK):
                chunk = ids[start : start + _IN_CHUNK]
                rows = self._db.query(
                    f"SELECT rid, embedding FROM items_emb WHERE rid IN ({','.join('?' * len(chunk))})", chunk
                )
                self._fill_i8(codes, i8, have, rows)
        if not have.all():  # rows went away under us: this time the rerank reads float rows
            return
        inv = np.empty(n, dtype=np.float32)
        for start in range(0, n, _LOAD_CHUNK):  # in chunks: a float copy of all rows would double the RAM
            part = i8[start : start + _LOAD_CHUNK].astype(np.float32)
            inv[start : start + _LOAD_CHUNK] = 1.0 / np.maximum(np.sqrt(np.einsum("ij,ij->i", part, part)), 1e-12)
        codes.i8, codes.inv_norm = i8, inv

    def _fill_i8(self, codes: _OwnerCodes, i8: np.ndarray, have: np.ndarray, rows: list) -> None:  # type: ignore[type-arg]
        if not rows:
            return
        pos, found = codes.positions([int(r[0]) for r in rows])
        keep = {int(r): k for k, r in enumerate(r[0] for r in rows)}
        floats = np.frombuffer(b"".join(rows[keep[int(r)]][1] for r in found), dtype=np.float32)
        i8[pos] = int8_scale(floats.reshape(len(found), self.dim))
        have[pos] = True

    def _load(self, owner: str, after: int, generation: int, seen: tuple[int, int]) -> _OwnerCodes:
        rows = self._db.query(
            "SELECT rid, tier, live, bits FROM items_bits WHERE owner = ? AND rid > ? ORDER BY rid", (owner, after)
        )
        n, width = len(rows), self.dim // 8
        raw = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.uint8).reshape(n, width)
        return _OwnerCodes(
            rids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=n),
            words=np.ascontiguousarray(np.ascontiguousarray(raw).view(self._word).T),
            tiers=np.fromiter((_TIER_CODE.get(r[1], 255) for r in rows), dtype=np.uint8, count=n),
            live=np.fromiter((bool(r[2]) for r in rows), dtype=bool, count=n),
            max_rid=int(rows[-1][0]) if rows else after,
            generation=generation,
            seen=seen,
        )

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
    ) -> tuple[list[tuple[int, float]], dict[int, np.ndarray]]:
        """Top-``k`` ``(rid, cosine similarity)`` of ``owner``'s vectors, best first.

        ``owner_count`` is accepted for callers that track it; the in-RAM codes know the
        count themselves.

        Returns:
            The ranked hits, and the float vectors that were read for them (the caller's MMR
            reuses them instead of reading them again).
        """
        mode = mode or self.mode
        q = np.asarray(query, dtype=np.float32)
        codes = self._codes_for(owner)
        keep = codes.mask(tiers, live_only)
        n = int(keep.sum())
        if n == 0:
            return [], {}
        m = max(RERANK_FACTOR * k, 40)
        if mode == "exact" or (mode == "auto" and n <= AUTO_EXACT_MAX) or m >= n:
            pos = np.flatnonzero(keep)
        else:
            dist = codes.hamming(sign_bits(q).view(self._word))
            dist[~keep] = self.dim + 1  # beyond any real distance, so never before a kept row
            pos = nearest_by_distance(dist, m, self.dim + 1)
        if codes.i8 is not None:
            rows = codes.unit_rows(pos)
            sims = rows @ q
            order = np.argsort(-sims)[:k]
            rids = codes.rids[pos]
            return ([(int(rids[i]), float(sims[i])) for i in order],
                    dict(zip(rids.tolist(), rows, strict=True)))
        vecs = self.vectors(codes.rids[pos].tolist())
        if not vecs:
            return [], {}
        ids = list(vecs)
        sims = np.stack([vecs[i] for i in ids]) @ q
        order = np.argsort(-sims)[:k]
        return [(ids[i], float(sims[i])) for i in order], vecs
