"""Write a small GGUF LoRA adapter for a base model with the ``gguf`` package.

It stands in for a trainer's adapter in tests and benchmarks: the tensor names, shapes,
``general.type=adapter``, ``adapter.type=lora`` and ``adapter.lora.alpha`` follow what
llama.cpp's adapter loader checks (``lora_a`` is ``[n_in, r]`` and ``lora_b`` is ``[r, n_out]`` in
GGML order, both matching the base tensor), so ``Llama(lora_path=...)`` loads it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .gguf_info import GgufInfo, read_gguf_info

__all__ = ["write_lora_adapter"]


def write_lora_adapter(
    base: GgufInfo | str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    layers: Sequence[int] = (0, 1),
    targets: Sequence[str] = ("attn_q", "attn_v"),
    rank: int = 4,
    alpha: float = 8.0,
    scale: float = 0.05,
    seed: int = 0,
    architecture: str | None = None,
) -> Path:
    """Write a random LoRA for ``base`` and return its path.

    Args:
        base: The base model (its header supplies architecture and tensor shapes).
        dest: Output path.
        layers: Blocks to adapt.
        targets: Weight names inside each block (``blk.{i}.{target}.weight``).
        rank: LoRA rank r.
        alpha: ``adapter.lora.alpha`` (llama.cpp scales by alpha / r).
        scale: Standard deviation of the random values; larger moves the output more.
        seed: RNG seed.
        architecture: Override ``general.architecture`` (tests write a wrong one on purpose).
    """
    from gguf import GGUFWriter

    info = base if isinstance(base, GgufInfo) else read_gguf_info(base)
    arch = architecture or info.architecture or "llama"
    rng = np.random.default_rng(seed)
    dest = Path(dest)
    writer = GGUFWriter(os.fspath(dest), arch)
    writer.add_type("adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(alpha))
    for layer in layers:
        for target in targets:
            name = f"blk.{layer}.{target}.weight"
            tensor = info.tensors.get(name)
            if tensor is None or len(tensor.shape) != 2:
                raise KeyError(f"base has no 2-D tensor {name!r}")
            n_in, n_out = tensor.shape
            # numpy shapes are GGML shapes reversed
            writer.add_tensor(f"{name}.lora_a", (rng.standard_normal((rank, n_in)) * scale).astype(np.float32))
            writer.add_tensor(f"{name}.lora_b", (rng.standard_normal((n_out, rank)) * scale).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return dest
