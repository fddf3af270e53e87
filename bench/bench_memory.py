"""Memory retrieval benchmark: latency, recall of quantised search, embedding and write throughput.

Usage::

    POCKETPILOT_HOME=... python bench/bench_memory.py --sizes 10000,100000

Needs the built embedder (``python -m pocketpilot.memory.build_embedder``). Corpus: synthetic
phone-assistant sentences; vectors are real MiniLM embeddings of a few thousand of them,
mixed and jittered to reach N (so neighbourhoods look like real embeddings without embedding
100k texts). Queries for recall are jittered corpus vectors; hybrid queries are real text,
embedded in the timed path. Baselines measured in the same run: numpy matmul and rank-bm25.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.memory import AccessPolicy, Caller, MemoryCandidate, Provenance, SqliteMemory  # noqa: E402
from pocketpilot.memory._rows import content_hash  # noqa: E402
from pocketpilot.memory.embedders import OnnxMiniLMEmbedder  # noqa: E402
from pocketpilot.memory.fts import build_match_query  # noqa: E402
from pocketpilot.memory.vectors import int8_scale  # noqa: E402

SVC, ADM = "bench-service-token-000", "bench-admin-credential-00"
NAMES = "Anna Ben Chloe David Emma Farid Grace Hugo Ines Jonas Kira Liam Mona Nils Omar Paula".split()
THINGS = ("wifi password", "dentist appointment", "flight to Lisbon", "birthday party", "gym class",
          "grocery list", "car service", "electricity bill", "school pickup", "team meeting", "parcel delivery",
          "airplane mode", "bluetooth headphones", "alarm at 6:30", "do not disturb", "phone backup",
          "photo album", "podcast episode", "running route", "pharmacy order")
VERBS = ("reminded me about", "asked about", "scheduled", "cancelled", "moved", "confirmed", "paid",
         "turned on", "turned off", "shared", "forgot", "booked")
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()


def sentence(rng: random.Random) -> str:
    return (f"{rng.choice(NAMES)} {rng.choice(VERBS)} the {rng.choice(THINGS)} on {rng.choice(DAYS)} "
            f"note {rng.randrange(10**6)}")


def pct(xs: list[float]) -> str:
    a = np.array(xs) * 1000
    return f"{np.percentile(a, 50):7.2f} / {np.percentile(a, 95):7.2f} ms"


def timed(fn, queries) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--base", type=int, default=3000, help="real texts embedded to seed the vectors")
    ap.add_argument("--bm25-max", type=int, default=100000, help="largest size for the rank-bm25 baseline")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng, nrng = random.Random(0), np.random.default_rng(0)
    fp32, int8 = OnnxMiniLMEmbedder(variant="fp32"), OnnxMiniLMEmbedder(variant="int8")

    print("== embedding throughput (batch 64, 2 cores)")
    sample = [sentence(rng) for _ in range(512)]
    for emb in (fp32, int8):
        emb.embed(sample[:64])
        t = time.perf_counter()
        emb.embed(sample)
        print(f"  {emb.name:<26} {len(sample) / (time.perf_counter() - t):7.0f} emb/s")
    q = "when is the dentist appointment"
    for emb in (fp32, int8):
        lat = timed(lambda s, e=emb: e.embed([s]), [q] * 50)
        print(f"  {emb.name:<26} single query {pct(lat)}")

    policy = AccessPolicy(SVC, ADM)
    caller = Caller.service(SVC, acting_for="u")
    with tempfile.TemporaryDirectory() as tmp:
        print("== write throughput (write_many, batches of 256, int8 embedder, verification on)")
        wstore = SqliteMemory(Path(tmp) / "w.db", policy, embedder=int8)
        cands = [MemoryCandidate(content=sentence(rng), provenance=Provenance(source="episode")) for _ in range(2048)]
        t = time.perf_counter()
        for i in range(0, len(cands), 256):
            wstore.write_many(caller, cands[i:i + 256])
        print(f"  {len(cands) / (time.perf_counter() - t):7.0f} memories/s")
        wstore.close()

        base_texts = [sentence(rng) for _ in range(args.base)]
        t = time.perf_counter()
        base = int8.embed(base_texts)
        print(f"== seeded {args.base} real embeddings in {time.perf_counter() - t:.1f}s")
        for n in sizes:
            run_size(n, Path(tmp) / f"s{n}.db", policy, caller, int8, base, nrng, rng, args)


def run_size(n, path, policy, caller, emb, base, nrng, rng, args):  # type: ignore[no-untyped-def]
    print(f"\n===== N = {n:,}")
    texts = [sentence(rng) for _ in range(n)]
    a, b = nrng.integers(0, len(base), n), nrng.integers(0, len(base), n)
    vecs = base[a] * 0.8 + base[b] * 0.2 + nrng.normal(0, 0.02, (n, base.shape[1])).astype(np.float32)
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    store = SqliteMemory(path, policy, embedder=emb)
    db, vi = store._db, store._vectors
    assert vi is not None
    t = time.perf_counter()
    now = time.time()
    with db.transaction() as conn:
        conn.execute("CREATE VIRTUAL TABLE items_vi8 USING vec0(rid INTEGER PRIMARY KEY, owner TEXT PARTITION KEY, "
                     f"embedding int8[{vecs.shape[1]}] distance_metric=cosine)")
        i8 = int8_scale(vecs)
        for i in range(n):
            conn.execute(
                "INSERT INTO items(id, owner, tier, content, content_hash, status, importance, trust, source, "
                "observed_at, created_at, has_vector) VALUES (?,?,?,?,?,?,?,?,?,?,?,1)",
                (uuid.uuid4().hex, "u", "episodic", texts[i], content_hash(texts[i]), "active", 0.5, 0.6,
                 "episode", now - i, now - i),
            )
            rid = conn.last_insert_rowid()
            vi.add(rid, "u", "episodic", True, vecs[i])
            conn.execute("INSERT INTO items_vi8(rid, owner, embedding) VALUES (?, 'u', vec_int8(?))",
                         (rid, i8[i].tobytes()))
    print(f"  bulk load {time.perf_counter() - t:.1f}s")
    rids = np.array([r for (r,) in db.query("SELECT rid FROM items ORDER BY rid")])
    qidx = nrng.integers(0, n, args.queries)
    qv = vecs[qidx] + nrng.normal(0, 0.03, (args.queries, vecs.shape[1])).astype(np.float32)
    qv = (qv / np.linalg.norm(qv, axis=1, keepdims=True)).astype(np.float32)
    qtexts = [" ".join(texts[i].split()[1:6:2]) for i in qidx]  # e.g. "asked the wifi"
    truth = [set(rids[np.argsort(-(vecs @ q))[:10]]) for q in qv]

    def recall(results):  # type: ignore[no-untyped-def]
        return np.mean([len(set(r) & t) / 10 for r, t in zip(results, truth)])

    tiers = ("episodic",)
    exact = lambda q: vi.search(q, "u", 10, tiers=tiers, mode="exact")  # noqa: E731
    bitr = lambda q: vi.search(q, "u", 10, tiers=tiers, mode="bit_rerank")  # noqa: E731

    def i8knn(q):  # type: ignore[no-untyped-def]
        s = int8_scale(q[None, :])[0].tobytes()
        return db.query("SELECT rid FROM items_vi8 WHERE embedding MATCH vec_int8(?) AND k = 10 AND owner = 'u'", (s,))

    res = {}
    for name, fn in (("vec0 float32 exact", exact), ("vec0 int8 (scaled)", i8knn), ("vec0 bit + exact rerank", bitr)):
        out = [fn(q) for q in qv[:5]]
        lat = timed(fn, qv)
        out = [[r if isinstance(r, (int, np.integer)) else r[0] for r in fn(q)] for q in qv]
        res[name] = recall(out)
        print(f"  {name:<28} p50/p95 {pct(lat)}   recall@10 vs exact {res[name]:.3f}")
    lat = timed(lambda q: np.argpartition(-(vecs @ q), 10)[:10], qv)
    print(f"  {'numpy matmul (RAM baseline)':<28} p50/p95 {pct(lat)}")

    def fts(s):  # type: ignore[no-untyped-def]
        return db.query("SELECT rowid FROM items_fts WHERE items_fts MATCH ? ORDER BY rank LIMIT 50",
                        (build_match_query(s),))

    print(f"  {'FTS5 bm25 (3 terms, OR)':<28} p50/p95 {pct(timed(fts, qtexts))}")
    if n <= args.bm25_max:
        from rank_bm25 import BM25Okapi

        t = time.perf_counter()
        bm = BM25Okapi([s.lower().split() for s in texts])
        build = time.perf_counter() - t
        lat = timed(lambda s: np.argpartition(-bm.get_scores(s.lower().split()), 10)[:10], qtexts)
        print(f"  {'rank-bm25 (in RAM)':<28} p50/p95 {pct(lat)}   (index build {build:.1f}s, not persistent)")
    for label in ("auto", "keyword"):
        if label == "keyword":
            store._embedder = None
        lat = timed(lambda s: store.search(caller, s, k=10), qtexts)
        what = "hybrid top-10 (query embed incl.)" if label == "auto" else "store.search keyword-only"
        print(f"  {what:<28} p50/p95 {pct(lat)}")
    store._embedder = emb
    store.close()


if __name__ == "__main__":
    main()
