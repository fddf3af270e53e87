from __future__ import annotations

import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import apsw
import numpy as np
import pytest
import sqlite_vec

from pocketpilot.memory import MemoryCandidate, Provenance, SqliteMemory
from pocketpilot.memory._db import _V1, SCHEMA_VERSION
from pocketpilot.memory.vectors import VectorIndex, sign_bits

SERVICE = "service-token-0123456789"  # as in conftest.py
ADMIN = "admin-credential-9876543210"
ROOT = Path(__file__).resolve().parents[2]


class HashEmbedder:
    """Deterministic 64-dim unit vectors from word hashes: fast, and near-identical texts stay close."""

    name, dim = "hash-test/v1", 64

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                rng = np.random.default_rng(zlib.crc32(w.encode()))  # stable across processes
                out[i] += rng.normal(size=self.dim)
            out[i] /= max(np.linalg.norm(out[i]), 1e-9)
        return out


def cand(content, **kw):
    return MemoryCandidate(content=content, provenance=Provenance(source="user_statement"), **kw)


def test_sign_bits_match_sqlite_vec():
    conn = apsw.Connection(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    v = np.random.default_rng(0).normal(size=(3, 384)).astype(np.float32)
    for row in range(3):
        ref = conn.execute("SELECT vec_quantize_binary(?)", (v[row].tobytes(),)).fetchone()[0]
        assert sign_bits(v[row]).tobytes() == ref


@pytest.mark.parametrize("mode", ["exact", "bit_rerank"])
def test_bit_scan_and_exact_agree_and_respect_owner_and_tier(tmp_path, policy, svc, svc_bob, mode):
    emb = HashEmbedder()
    with SqliteMemory(tmp_path / "v.db", policy, embedder=emb, vector_mode=mode) as store:
        words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()
        texts = [f"{a} {b} {c}" for a in words for b in words[:6] for c in words[6:9]]
        store.write_many(svc, [cand(t) for t in texts])
        store.write_many(svc_bob, [cand(t + " bob") for t in texts[:50]])
        store.write(svc, cand("alpha bravo golf in the user tier", tier="user"))
        vi = store._vectors
        assert isinstance(vi, VectorIndex)
        q = emb.embed(["alpha bravo golf"])[0]
        hits, vecs = vi.search(q, "alice", 10, tiers=("episodic",))
        exact, _ = vi.search(q, "alice", 10, tiers=("episodic",), mode="exact")
        assert [r for r, _ in hits][:3] == [r for r, _ in exact][:3]
        assert len({r for r, _ in hits} & {r for r, _ in exact}) >= 8
        owners = {o for (o,) in store._db.query(
            f"SELECT owner FROM items WHERE rid IN ({','.join('?' * len(hits))})", [r for r, _ in hits])}
        tiers = {t for (t,) in store._db.query(
            f"SELECT tier FROM items WHERE rid IN ({','.join('?' * len(hits))})", [r for r, _ in hits])}
        assert owners == {"alice"} and tiers == {"episodic"}
        assert set(vecs) >= {r for r, _ in hits}
        sims = [s for _, s in hits]
        assert sims == sorted(sims, reverse=True) and sims[0] > 0.9


def test_ram_codes_follow_writes_supersession_and_deletes(tmp_path, policy, svc, alice):
    with SqliteMemory(tmp_path / "v.db", policy, embedder=HashEmbedder(), vector_mode="bit_rerank") as store:
        store.write_many(svc, [cand(f"filler memory number {i} about nothing") for i in range(300)])
        assert store.search(svc, "zebra crossing lights", k=3, mode="vector") != []  # codes now cached
        new = store.write(svc, cand("zebra crossing lights are broken")).id
        assert store.search(svc, "zebra crossing lights", k=1, mode="vector")[0].item.id == new
        store.delete(alice, [new])
        assert all(h.item.id != new for h in store.search(svc, "zebra crossing lights", k=10, mode="vector"))
        newer = store.write(svc, cand("zebra crossing lights were fixed")).id  # may reuse the deleted rowid
        assert store.search(svc, "zebra crossing lights", k=1, mode="vector")[0].item.id == newer


OTHER_PROCESS = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    sys.path.insert(0, {tests!r})
    from test_vector_index import HashEmbedder, cand
    from pocketpilot.memory import AccessPolicy, Caller, SqliteMemory
    store = SqliteMemory(sys.argv[1], AccessPolicy({svc!r}, {adm!r}), embedder=HashEmbedder())
    svc = Caller.service({svc!r}, acting_for="alice")
    if sys.argv[2] == "write":
        print(store.write(svc, cand("parcel locker code is 4411")).id)
    else:
        store.delete(Caller.admin({adm!r}, acting_for="alice"), [sys.argv[3]])
    store.close()
    """
).format(root=str(ROOT), tests=str(Path(__file__).parent), svc=SERVICE, adm=ADMIN)


def test_ram_codes_see_other_processes(tmp_path, policy, svc):
    path = tmp_path / "v.db"
    with SqliteMemory(path, policy, embedder=HashEmbedder(), vector_mode="bit_rerank") as store:
        store.write_many(svc, [cand(f"filler memory number {i} about nothing") for i in range(300)])
        store.search(svc, "parcel locker code", k=3, mode="vector")  # codes cached in this process

        def other(*args):
            out = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(path), *args],
                                 capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            return out.stdout.strip()

        new = other("write")
        assert store.search(svc, "parcel locker code", k=1, mode="vector")[0].item.id == new
        other("delete", new)
        assert all(h.item.id != new for h in store.search(svc, "parcel locker code", k=10, mode="vector"))
        assert all(h.item.id != new for h in store.search(svc, "parcel locker code 4411", k=10))


def test_schema_1_store_with_vec0_vectors_migrates(tmp_path, policy, svc):
    path = tmp_path / "old.db"
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.execute(_V1)
    conn.execute("PRAGMA user_version=1")
    conn.execute("PRAGMA application_id=1347439921")
    conn.execute("CREATE VIRTUAL TABLE items_vec USING vec0(rid INTEGER PRIMARY KEY, owner TEXT PARTITION KEY, "
                 "tier TEXT, live INTEGER, embedding float[64] distance_metric=cosine)")
    conn.execute("CREATE VIRTUAL TABLE items_vbit USING vec0(rid INTEGER PRIMARY KEY, owner TEXT PARTITION KEY, "
                 "tier TEXT, live INTEGER, embedding bit[64])")
    emb = HashEmbedder()
    vec = emb.embed(["the spare key is under the blue pot"])[0]
    conn.execute("INSERT INTO items(id, owner, tier, content, content_hash, status, importance, trust, source, "
                 "observed_at, created_at, has_vector) VALUES ('old1', 'alice', 'episodic', "
                 "'the spare key is under the blue pot', 'h', 'active', 0.5, 0.9, 'user_statement', 0, 0, 1)")
    conn.execute("INSERT INTO items_vec(rid, owner, tier, live, embedding) VALUES (1, 'alice', 'episodic', 1, ?)",
                 (vec.tobytes(),))
    conn.execute("INSERT INTO meta(key, value) VALUES ('embedder', 'hash-test/v1'), ('dim', '64')")
    conn.close()
    with SqliteMemory(path, policy, embedder=emb) as store:
        assert store._db.scalar("PRAGMA user_version") == SCHEMA_VERSION
        assert not store._db.scalar("SELECT count(*) FROM sqlite_master WHERE name IN ('items_vec', 'items_vbit')")
        np.testing.assert_array_equal(store.item_vectors(svc, ["old1"])["old1"], vec)
        hit = store.search(svc, "where is the spare key", k=1, mode="vector")[0]
        assert hit.item.id == "old1"


def test_int8_ram_rerank_agrees_with_the_float_rows_and_survives_reloads(tmp_path, policy, svc, alice, monkeypatch):
    from pocketpilot.memory import vectors as vmod

    emb = HashEmbedder()
    with SqliteMemory(tmp_path / "v.db", policy, embedder=emb, vector_mode="bit_rerank") as store:
        store.write_many(svc, [cand(f"memory {i} about {w} and {v}") for i, (w, v) in enumerate(
            (a, b) for a in "red green blue cyan pink gold".split() for b in "cats dogs owls bees ants".split() * 8)])
        vi = store._vectors
        q = emb.embed(["gold owls"])[0]
        ram, ram_vecs = vi.search(q, "alice", 20, tiers=("episodic",))
        codes = vi._codes["alice"]
        assert codes.i8 is not None and codes.i8.dtype == np.int8 and codes.i8.shape == (len(codes.rids), emb.dim)
        # the float rerank, from the store's rows, ranks the same shortlist the same way
        monkeypatch.setattr(vmod, "RAM_RERANK_MAX", 10)
        vi._codes.clear()
        flt, _ = vi.search(q, "alice", 20, tiers=("episodic",))
        assert vi._codes["alice"].i8 is None  # above the cap: no RAM copy
        assert [r for r, _ in ram][:10] == [r for r, _ in flt][:10]
        assert np.allclose([s for _, s in ram], [s for _, s in flt], atol=0.02)
        assert all(abs(float(np.linalg.norm(v)) - 1) < 1e-3 for v in ram_vecs.values())
        monkeypatch.setattr(vmod, "RAM_RERANK_MAX", 250_000)
        vi._codes.clear()
        vi.search(q, "alice", 5, tiers=("episodic",))
        before = vi._codes["alice"]
        # a delete bumps the generation: the codes reload, surviving int8 rows are carried over
        gone = ram[0][0]
        gone_id = store._db.scalar("SELECT id FROM items WHERE rid = ?", (gone,))
        store.delete(alice, [gone_id])
        after_hits, _ = vi.search(q, "alice", 20, tiers=("episodic",))
        after = vi._codes["alice"]
        assert after is not before and after.i8 is not None and len(after.rids) == len(before.rids) - 1
        assert gone not in {r for r, _ in after_hits}
        assert [r for r, _ in after_hits][:9] == [r for r, _ in ram][1:10]
        keep = np.searchsorted(before.rids, after.rids)
        assert np.array_equal(after.i8, before.i8[keep])
        # and keyword-only hits get their vectors from RAM too
        some = after.rids[:3].tolist()
        got = vi.vectors(some, "alice")
        assert set(got) == set(some)
