"""Memory benchmark: hybrid retrieval latency at 10k/100k/1M, write throughput, resident memory.

Usage::

    python bench/bench_memory.py --sizes 10000,100000,1000000

Needs the built embedder (``python -m pocketpilot.memory.build_embedder``).

What is measured, in one run:

- embedding throughput and single-query latency, fp32 and int8 MiniLM;
- write throughput through ``SqliteMemory.write_many`` (batches of 256, int8 embedding,
  verification on, no LLM) — the target is >= 300 memories/s;
- per store size: ``SqliteMemory.search`` top-10, query embedding included (int8 query
  embedder), p50/p95 — targets <= 10/25 ms at 100k and p95 <= 100 ms at 1M — plus its
  stages alone (query embedding, FTS5 BM25, vector search) and baselines measured in the same
  run: a numpy matmul over all vectors in RAM (the machine's speed right now) and rank-bm25;
- recall@10 of the store's bit scan + exact rerank against exact cosine;
- resident memory of a fresh process that opens the 100k store and serves queries
  (target <= 300 MB).

Corpus: synthetic phone-assistant sentences over a small vocabulary (16 names, 12 verbs,
20 things, 7 days), so every query term is in 5-14 % of the items: a hard case for BM25,
whose cost grows with the number of matches. Items are loaded through the store's schema in
bulk (not ``write_many``) to make 1M feasible; their vectors are not embedded one by one but
are real MiniLM embeddings of ``--base`` sentences, mixed (0.8/0.2) and jittered (sigma 0.02) to
reach N, so neighbourhoods look like real embeddings. Queries are real text, embedded in the
timed path.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.memory import AccessPolicy, Caller, MemoryCandidate, Provenance, SqliteMemory  # noqa: E402
from pocketpilot.memory import store as store_mod  # noqa: E402
from pocketpilot.memory._rows import content_hash  # noqa: E402
from pocketpilot.memory.embedders import OnnxMiniLMEmbedder  # noqa: E402
from pocketpilot.memory.fts import build_match_query  # noqa: E402
from pocketpilot.memory.store import SEARCH_TIERS  # noqa: E402
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

RSS_PROBE = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from pocketpilot.memory import AccessPolicy, Caller, SqliteMemory
from pocketpilot.memory.embedders import OnnxMiniLMEmbedder
emb = OnnxMiniLMEmbedder(variant="int8")
store = SqliteMemory(sys.argv[1], AccessPolicy({svc!r}, {adm!r}), embedder=emb)
caller = Caller.service({svc!r}, acting_for="u")
queries = json.loads(sys.argv[2])
for q in queries:
    store.search(caller, q, k=10)
rss = int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
# VmHWM, not ru_maxrss: a child started by fork+exec inherits the parent's ru_maxrss on Linux,
# so a big benchmark parent would show up as this process's peak.
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({{"rss_mb": rss / 2**20, "peak_mb": hwm / 1024}}))
"""


def sentence(rng: random.Random) -> str:
    """One synthetic phone-assistant sentence; the trailing number keeps every item distinct."""
    return (f"{rng.choice(NAMES)} {rng.choice(VERBS)} the {rng.choice(THINGS)} on {rng.choice(DAYS)} "
            f"note {rng.randrange(10**6)}")


def pct(xs: list[float]) -> tuple[float, float]:
    """The 50th and 95th percentiles of ``xs`` (seconds), in milliseconds."""
    a = np.array(xs) * 1000
    return float(np.percentile(a, 50)), float(np.percentile(a, 95))


def fmt(xs: list[float]) -> str:
    """``xs``'s p50 / p95 as one aligned column of the report."""
    p50, p95 = pct(xs)
    return f"{p50:8.2f} / {p95:8.2f} ms"


def timed(fn, items) -> list[float]:  # type: ignore[no-untyped-def]
    """Call ``fn`` on each item in turn and return each call's wall time, in seconds."""
    out = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t)
    return out


def synthetic_vectors(base: np.ndarray, n: int, nrng: np.random.Generator) -> np.ndarray:
    """``n`` unit vectors, each mixed (0.8/0.2) from two real embeddings of ``base`` and jittered.

    Mixing real embeddings keeps neighbourhoods looking real at sizes nobody can embed one by one.
    """
    a, b = nrng.integers(0, len(base), n), nrng.integers(0, len(base), n)
    vecs = base[a] * 0.8 + base[b] * 0.2 + nrng.normal(0, 0.02, (n, base.shape[1])).astype(np.float32)
    return (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)


def bulk_load(store: SqliteMemory, texts: list[str], vecs: np.ndarray, owner: str = "u", chunk: int = 20_000) -> None:
    """Insert items + FTS (trigger) + vectors through the store's schema, many rows per statement."""
    db, vi = store._db, store._vectors
    assert vi is not None
    now = time.time()
    for start in range(0, len(texts), chunk):
        rows = [(uuid.uuid4().hex, owner, "episodic", texts[i], content_hash(texts[i]), "active", 0.5, 0.6,
                 "episode", now - i * 60, now - i * 60) for i in range(start, min(start + chunk, len(texts)))]
        with db.transaction() as conn:
            first = int(db.scalar("SELECT coalesce(max(rid), 0) FROM items")) + 1
            conn.executemany(
                "INSERT INTO items(id, owner, tier, content, content_hash, status, importance, trust, source, "
                "observed_at, created_at, has_vector) VALUES (?,?,?,?,?,?,?,?,?,?,?,1)", rows)
            vi.add_many([(first + j, owner, "episodic", True, vecs[start + j]) for j in range(len(rows))])


def vec0_baselines(db, vecs: np.ndarray, qv: np.ndarray, truth: list[set]) -> None:  # type: ignore[no-untyped-def]
    """sqlite-vec's own vec0 KNN over the same vectors (float, int8, bit), the design's first choice.

    Built here, in the same file, only to be measured against the store's numpy bit scan.
    """
    n, dim = vecs.shape
    q8 = lambda v: int8_scale(v[None])[0].tobytes()  # noqa: E731
    for kind, col, fn, enc in (
        ("float", f"float[{dim}] distance_metric=cosine", "?", lambda v: v.astype(np.float32).tobytes()),
        ("int8", f"int8[{dim}] distance_metric=cosine", "vec_int8(?)", q8),
        ("bit", f"bit[{dim}]", "vec_quantize_binary(?)", lambda v: v.astype(np.float32).tobytes()),
    ):
        table = f"bench_vec0_{kind}"
        with db.transaction() as conn:
            conn.execute(f"CREATE VIRTUAL TABLE {table} USING vec0(v {col})")
            conn.executemany(f"INSERT INTO {table}(rowid, v) VALUES (?, {fn})",
                             [(i + 1, enc(vecs[i])) for i in range(n)])
        sql = f"SELECT rowid FROM {table} WHERE v MATCH {fn} AND k = 10"
        lat = timed(lambda v, s=sql, e=enc: db.query(s, (e(v),)), qv)
        rec = np.mean([len({int(r) for (r,) in db.query(sql, (enc(v),))} & t) / 10
                       for v, t in zip(qv, truth, strict=True)])
        print(f"  {f'baseline: sqlite-vec vec0 {kind} KNN':<34} {fmt(lat)}   recall@10 vs exact {rec:.3f}")
        with db.transaction() as conn:
            conn.execute(f"DROP TABLE {table}")


def main() -> None:
    """Print the embedding and write throughput, then the retrieval figures at each store size."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--base", type=int, default=3000, help="real texts embedded to seed the vectors")
    ap.add_argument("--bm25-max", type=int, default=100000, help="largest size for the rank-bm25 baseline")
    ap.add_argument("--vec0-max", type=int, default=100000, help="largest size for the sqlite-vec vec0 baselines")
    ap.add_argument("--writes", type=int, default=2048)
    ap.add_argument("--dir", default=None, help="where the stores go (default: a temporary dir)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng, nrng = random.Random(0), np.random.default_rng(0)
    fp32, int8 = OnnxMiniLMEmbedder(variant="fp32"), OnnxMiniLMEmbedder(variant="int8")

    # The old setup as a baseline: one batch at a time on onnxruntime's own intra-op threads.
    ort_threads = {e.name: OnnxMiniLMEmbedder(variant=e.name.split("/")[1], threads=None, workers=1, batch_size=64)
                   for e in (fp32, int8)}
    print("== embedding (default: batches of 32 on 1 intra-op thread each, in parallel; "
          "ort threads: batches of 64 one at a time)")
    sample = [sentence(rng) for _ in range(512)]
    for emb in (fp32, int8, *ort_threads.values()):
        emb.embed(sample[:64])
        t = time.perf_counter()
        emb.embed(sample)
        label = emb.name + (" ort threads" if emb in ort_threads.values() else "")
        print(f"  {label:<34} {len(sample) / (time.perf_counter() - t):7.0f} emb/s")
    q = "when is the dentist appointment"
    for emb in (fp32, int8, ort_threads[int8.name]):
        label = emb.name + (" ort threads" if emb is ort_threads[int8.name] else "")
        print(f"  {label:<34} single query {fmt(timed(lambda s, e=emb: e.embed([s]), [q] * 50))}")
    args.ort_threads = ort_threads[int8.name]

    policy = AccessPolicy(SVC, ADM)
    caller = Caller.service(SVC, acting_for="u")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print(f"== write throughput (write_many, batches of 256, verification on, {args.writes} memories)")
        for emb in (int8, fp32):
            wstore = SqliteMemory(Path(tmp) / f"w-{emb.name.split('/')[1]}.db", policy, embedder=emb)
            cands = [MemoryCandidate(content=sentence(rng), provenance=Provenance(source="episode"))
                     for _ in range(args.writes)]
            t = time.perf_counter()
            for i in range(0, len(cands), 256):
                wstore.write_many(caller, cands[i:i + 256])
            dt = time.perf_counter() - t
            t = time.perf_counter()
            emb.embed([c.content for c in cands])
            et = time.perf_counter() - t
            print(f"  {emb.name:<26} {len(cands) / dt:7.0f} memories/s   (embedding alone {len(cands) / et:6.0f}/s)")
            wstore.close()

        base_texts = [sentence(rng) for _ in range(args.base)]
        t = time.perf_counter()
        base = int8.embed(base_texts)
        print(f"== seeded {args.base} real embeddings in {time.perf_counter() - t:.1f}s")
        for n in sizes:
            run_size(n, Path(tmp) / f"s{n}.db", policy, caller, fp32, int8, base, nrng, rng, args)


def run_size(n, path, policy, caller, fp32, int8, base, nrng, rng, args):  # type: ignore[no-untyped-def]
    """Load a store of ``n`` items and print its search figures beside the baselines measured on it.

    At 100k it also prints the resident memory of a fresh process that serves queries from it.
    """
    print(f"\n===== N = {n:,}")
    texts = [sentence(rng) for _ in range(n)]
    vecs = synthetic_vectors(base, n, nrng)
    store = SqliteMemory(path, policy, embedder=fp32, query_embedder=int8)
    t = time.perf_counter()
    bulk_load(store, texts, vecs)
    print(f"  bulk load {time.perf_counter() - t:.1f}s   file {path.stat().st_size / 2**20:.0f} MB")
    vi, db = store._vectors, store._db
    assert vi is not None
    rids = np.array([r for (r,) in db.query("SELECT rid FROM items ORDER BY rid")])
    qidx = nrng.integers(0, n, args.queries)
    qtexts = [" ".join(texts[i].split()[1:6:2]) for i in qidx]  # e.g. "asked the wifi"
    qv = int8.embed(qtexts)

    # Vector side alone, and its recall against exact cosine over all vectors: asked for the
    # top 10 directly, and as the store's search asks (a pool of 50, of which the top 10).
    truth = [set(rids[np.argpartition(-(vecs @ v), 10)[:10]]) for v in qv]
    tiers = SEARCH_TIERS
    for want in (10, 50):
        search = lambda v, w=want: vi.search(v, "u", w, tiers=tiers, mode="bit_rerank")[0]  # noqa: E731
        for v in qv[:3]:
            search(v)
        lat = timed(search, qv)
        rec = np.mean([len({r for r, _ in search(v)[:10]} & t) / 10 for v, t in zip(qv, truth, strict=True)])
        print(f"  {f'vector: bit scan + rerank, k={want}':<34} {fmt(lat)}   recall@10 vs exact {rec:.3f}")
    lat = timed(lambda v: np.argpartition(-(vecs @ v), 10)[:10], qv)
    ram_p50 = pct(lat)[0]
    print(f"  {'baseline: numpy matmul in RAM':<34} {fmt(lat)}")
    if n <= args.vec0_max:
        vec0_baselines(db, vecs, qv, truth)

    fts_sql = ("SELECT rowid FROM items_fts WHERE items_fts MATCH ? ORDER BY bm25(items_fts, 1.0, 0.3) LIMIT 200")
    lat = timed(lambda s: db.query(fts_sql, (build_match_query(s),)), qtexts)
    print(f"  {'keyword: FTS5 bm25 top-200':<34} {fmt(lat)}")
    if n <= args.bm25_max:
        from rank_bm25 import BM25Okapi

        t = time.perf_counter()
        bm = BM25Okapi([s.lower().split() for s in texts])
        build = time.perf_counter() - t
        lat = timed(lambda s: np.argpartition(-bm.get_scores(s.lower().split()), 10)[:10], qtexts)
        print(f"  {'baseline: rank-bm25 in RAM':<34} {fmt(lat)}   (index build {build:.1f}s, not persistent)")
    print(f"  {'query embedding int8':<34} {fmt(timed(lambda s: int8.embed([s]), qtexts))}")

    for s in qtexts[:5]:
        store.search(caller, s, k=10)
    lat = timed(lambda s: store.search(caller, s, k=10), qtexts)
    p50, p95 = pct(lat)
    print(f"  {'HYBRID top-10 (query embed incl.)':<34} {fmt(lat)}   p50 = {p50 / ram_p50:.1f}x the RAM matmul"
          f"   (overlap=auto, load {os.getloadavg()[0]:.2f})")
    # The keyword side on a worker thread or not, forced both ways (auto picks by size and idle cores).
    for forced in ("never", "always"):
        store.overlap = forced
        print(f"  {f'  overlap={forced}':<34} {fmt(timed(lambda s: store.search(caller, s, k=10), qtexts))}")
    store.overlap = "auto"
    # The same store with the old query embedder (onnxruntime's intra-op threads, one per core).
    other = SqliteMemory(path, policy, embedder=fp32, query_embedder=args.ort_threads)
    for s in qtexts[:5]:
        other.search(caller, s, k=10)
    for forced in ("auto", "never", "always"):
        other.overlap = forced  # type: ignore[assignment]
        print(f"  {f'baseline: HYBRID, ort-threads query embedder, overlap={forced}':<34} "
              f"{fmt(timed(lambda s: other.search(caller, s, k=10), qtexts))}")
    other.close()
    # What the all-terms fast path of the keyword side costs in fidelity: the same searches
    # with the exact OR ranking forced, compared top-10 for top-10.
    fast = {s: [h.item.id for h in store.search(caller, s, k=10)] for s in qtexts}
    kfast = {s: [h.item.id for h in store.search(caller, s, k=10, mode="keyword")] for s in qtexts}
    saved, store_mod.CONJUNCTIVE_ABOVE = store_mod.CONJUNCTIVE_ABOVE, 10**12
    try:
        lat = timed(lambda s: store.search(caller, s, k=10), qtexts)
        exact = {s: [h.item.id for h in store.search(caller, s, k=10)] for s in qtexts}
        kexact = {s: [h.item.id for h in store.search(caller, s, k=10, mode="keyword")] for s in qtexts}
    finally:
        store_mod.CONJUNCTIVE_ABOVE = saved
    overlap = np.mean([len(set(fast[s]) & set(exact[s])) / 10 for s in qtexts])
    koverlap = np.mean([len(set(kfast[s]) & set(kexact[s])) / 10 for s in qtexts])
    print(f"  {'baseline: HYBRID, exact OR BM25':<34} {fmt(lat)}   top-10 overlap with the fast path: "
          f"hybrid {overlap:.3f}, keyword-only {koverlap:.3f}")
    store.close()
    if n == 100_000:
        probe = RSS_PROBE.format(root=str(Path(__file__).resolve().parents[1]), svc=SVC, adm=ADM)
        out = subprocess.run([sys.executable, "-c", probe, str(path), json.dumps(qtexts)],
                             capture_output=True, text=True, check=True)
        rss = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"  {'RSS: fresh process, 100k store':<34} {rss['rss_mb']:6.0f} MB now, {rss['peak_mb']:6.0f} MB peak"
              f"   ({len(qtexts)} queries served, int8 embedder loaded)")
    path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
