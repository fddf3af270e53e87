"""Tiny GGUF files written with the `gguf` package: a fake base model (header + small tensors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_tiny_model(path: Path, *, architecture: str = "qwen2", tokens: list[str] | None = None,
                     dim: int = 32, kv_dim: int = 8, layers: int = 2) -> Path:
    from gguf import GGUFWriter

    w = GGUFWriter(str(path), architecture)
    w.add_type("model")
    w.add_file_type(0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens or [f"tok{i}" for i in range(64)])
    rng = np.random.default_rng(0)
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_q.weight", rng.standard_normal((dim, dim)).astype(np.float32))
        w.add_tensor(f"blk.{i}.attn_v.weight", rng.standard_normal((kv_dim, dim)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _tokenizer_arrays(path: Path) -> dict[str, object]:
    """The tokenizer keys of a GGUF file as values (strings and string/int arrays), streamed with struct."""
    import mmap
    import struct

    scalars = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    out: dict[str, object] = {}
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        pos = 24
        n_kv = struct.unpack_from("<Q", buf, 16)[0]

        def string(p: int) -> tuple[str, int]:
            n = struct.unpack_from("<Q", buf, p)[0]
            return buf[p + 8 : p + 8 + n].decode("utf-8", "surrogateescape"), p + 8 + n

        def value(code: int, p: int) -> tuple[object, int]:
            if code in scalars:
                return struct.unpack_from(scalars[code], buf, p)[0], p + struct.calcsize(scalars[code])
            if code == 8:
                return string(p)
            sub, count = struct.unpack_from("<IQ", buf, p)
            p += 12
            if sub in scalars:
                size = struct.calcsize(scalars[sub])
                return list(struct.unpack_from(f"<{count}{scalars[sub][1]}", buf, p)), p + size * count
            items = []
            for _ in range(count):
                item, p = string(p)
                items.append(item)
            return items, p

        for _ in range(n_kv):
            key, pos = string(pos)
            code = struct.unpack_from("<I", buf, pos)[0]
            val, pos = value(code, pos + 4)
            if key.startswith("tokenizer.") and key != "tokenizer.chat_template":
                out[key] = val
    return out


def write_qwen2_sibling(base: Path, path: Path, *, dim: int = 64, layers: int = 2) -> Path:
    """A small random qwen2 model with ``base``'s tokenizer: llama.cpp runs it, it fits the base's
    header checks, and it predicts nothing like the base (a stand-in for a larger sibling model)."""
    from gguf import GGUFWriter

    tok = _tokenizer_arrays(base)
    tokens = tok["tokenizer.ggml.tokens"]
    assert isinstance(tokens, list)
    heads, kv_heads, ffn = 4, 2, 2 * dim
    kv_dim = dim // heads * kv_heads
    w = GGUFWriter(str(path), "qwen2")
    w.add_type("model")
    w.add_file_type(0)
    w.add_context_length(2048)
    w.add_embedding_length(dim)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(1e6)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model(str(tok["tokenizer.ggml.model"]))
    w.add_tokenizer_pre(str(tok["tokenizer.ggml.pre"]))
    w.add_token_list(tokens)
    w.add_token_types(tok["tokenizer.ggml.token_type"])  # type: ignore[arg-type]
    w.add_token_merges(tok["tokenizer.ggml.merges"])  # type: ignore[arg-type]
    w.add_bos_token_id(int(tok["tokenizer.ggml.bos_token_id"]))  # type: ignore[arg-type]
    w.add_eos_token_id(int(tok["tokenizer.ggml.eos_token_id"]))  # type: ignore[arg-type]
    w.add_add_bos_token(False)
    rng = np.random.default_rng(1)

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    w.add_tensor("token_embd.weight", rand(len(tokens), dim))
    w.add_tensor("output_norm.weight", np.ones(dim, dtype=np.float32))
    for i in range(layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(dim, dtype=np.float32))
        w.add_tensor(f"blk.{i}.attn_q.weight", rand(dim, dim))
        w.add_tensor(f"blk.{i}.attn_q.bias", rand(dim))
        w.add_tensor(f"blk.{i}.attn_k.weight", rand(kv_dim, dim))
        w.add_tensor(f"blk.{i}.attn_k.bias", rand(kv_dim))
        w.add_tensor(f"blk.{i}.attn_v.weight", rand(kv_dim, dim))
        w.add_tensor(f"blk.{i}.attn_v.bias", rand(kv_dim))
        w.add_tensor(f"blk.{i}.attn_output.weight", rand(dim, dim))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(dim, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", rand(ffn, dim))
        w.add_tensor(f"blk.{i}.ffn_up.weight", rand(ffn, dim))
        w.add_tensor(f"blk.{i}.ffn_down.weight", rand(dim, ffn))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
