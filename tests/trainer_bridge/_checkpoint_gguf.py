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
