"""GGUF header reading, compatibility with the base, LoRA writing, quantization faults."""

from __future__ import annotations

from pathlib import Path

import pytest
from _checkpoint_gguf import write_tiny_model

from pocketpilot.errors import ModelIntegrityError, PocketPilotError
from pocketpilot.trainer_bridge.checkpoints import (
    CheckpointIntegrityError,
    CheckpointMismatchError,
    QuantizeError,
    check_compatible,
    quantize_gguf,
    read_gguf_info,
    write_lora_adapter,
)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return write_tiny_model(tmp_path / "base.gguf")


def test_header_facts_and_tokenizer_fingerprint(base: Path, tmp_path: Path) -> None:
    info = read_gguf_info(base)
    assert info.architecture == "qwen2" and info.kind == "model" and info.file_type == 0
    assert info.tokenizer is not None and info.tokenizer.vocab_size == 64
    assert info.tensors["blk.0.attn_v.weight"].shape == (32, 8)  # GGML order: ne[0] = n_in
    assert info.data_end == info.size
    other = read_gguf_info(write_tiny_model(tmp_path / "other.gguf", tokens=[f"x{i}" for i in range(64)]))
    assert other.tokenizer is not None
    assert other.tokenizer.tokens_sha256 != info.tokenizer.tokens_sha256
    assert other.tokenizer.vocab_size == info.tokenizer.vocab_size


def test_truncated_and_non_gguf_files_are_rejected(base: Path, tmp_path: Path) -> None:
    data = base.read_bytes()
    half = tmp_path / "half.gguf"
    half.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointIntegrityError, match="truncated"):
        read_gguf_info(half)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    with pytest.raises(CheckpointIntegrityError, match="bad magic") as exc:
        read_gguf_info(junk)
    assert isinstance(exc.value, ModelIntegrityError) and isinstance(exc.value, PocketPilotError)
    header_cut = tmp_path / "cut.gguf"
    header_cut.write_bytes(data[:40])
    with pytest.raises(CheckpointIntegrityError, match="truncated header"):
        read_gguf_info(header_cut)


def test_lora_matches_its_base_and_wrong_ones_do_not(base: Path, tmp_path: Path) -> None:
    base_info = read_gguf_info(base)
    lora = read_gguf_info(write_lora_adapter(base_info, tmp_path / "lora.gguf", rank=2))
    assert lora.kind == "adapter" and lora.metadata["adapter.type"] == "lora"
    assert lora.tensors["blk.1.attn_v.weight.lora_b"].shape == (2, 8)
    check_compatible(lora, base_info)

    wrong_arch = read_gguf_info(write_lora_adapter(base_info, tmp_path / "llama.gguf", architecture="llama"))
    with pytest.raises(CheckpointMismatchError, match="architecture 'llama' != base 'qwen2'"):
        check_compatible(wrong_arch, base_info)

    bigger = read_gguf_info(write_tiny_model(tmp_path / "big.gguf", dim=64))
    lora_for_bigger = read_gguf_info(write_lora_adapter(bigger, tmp_path / "lora64.gguf"))
    with pytest.raises(CheckpointMismatchError, match="adapter maps 64->64"):
        check_compatible(lora_for_bigger, base_info)

    deep = read_gguf_info(write_tiny_model(tmp_path / "deep.gguf", layers=4))
    lora_deep = read_gguf_info(write_lora_adapter(deep, tmp_path / "lora_deep.gguf", layers=(3,)))
    with pytest.raises(CheckpointMismatchError, match="no such tensor"):
        check_compatible(lora_deep, base_info)


def test_model_must_share_architecture_and_tokenizer(base: Path, tmp_path: Path) -> None:
    base_info = read_gguf_info(base)
    check_compatible(read_gguf_info(write_tiny_model(tmp_path / "same.gguf")), base_info)
    with pytest.raises(CheckpointMismatchError, match="tokenizer tokens_sha256"):
        check_compatible(read_gguf_info(write_tiny_model(tmp_path / "t.gguf", tokens=list("abcd") * 16)), base_info)
    with pytest.raises(CheckpointMismatchError, match="tokenizer vocab_size 65 != 64"):
        check_compatible(read_gguf_info(write_tiny_model(tmp_path / "v.gguf", tokens=[f"tok{i}" for i in range(65)])), base_info)
    with pytest.raises(CheckpointMismatchError, match="architecture 'gemma3'"):
        check_compatible(read_gguf_info(write_tiny_model(tmp_path / "g.gguf", architecture="gemma3")), base_info)


def test_quantize_rejects_unknown_types_and_adapters(base: Path, tmp_path: Path) -> None:
    with pytest.raises(QuantizeError, match="unknown quantization 'Q9_X'"):
        quantize_gguf(base, tmp_path / "out.gguf", "Q9_X")
    lora = write_lora_adapter(base, tmp_path / "lora.gguf")
    with pytest.raises(QuantizeError, match="only models are quantized"):
        quantize_gguf(lora, tmp_path / "out.gguf", "Q8_0")
    assert not (tmp_path / "out.gguf").exists()


@pytest.mark.slow
def test_failed_llama_quantization_leaves_no_partial_file(tmp_path: Path) -> None:
    # a GGUF with an architecture llama.cpp does not know: the child process fails
    bad = write_tiny_model(tmp_path / "bad.gguf", architecture="nosucharch")
    out_dir = tmp_path / "out"
    with pytest.raises(QuantizeError, match="could not quantize"):
        quantize_gguf(bad, out_dir / "bad.Q8_0.gguf", "Q8_0")
    assert list(out_dir.iterdir()) == []
