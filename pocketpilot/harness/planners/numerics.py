"""Which llama.cpp evaluations give bit-identical logits, and the load settings that make them.

Greedy decoding is reproducible only if the logits are. llama.cpp's CPU backend picks a
matrix kernel by the number of rows in a batch: llamafile's tinyBLAS from two rows up, the
repacked (interleaved) K-quant kernels from four, the tiled K-quant kernels from eight. Each
sums in another order, and the last-bit differences grow through the layers into logits
that differ by tenths, enough to flip a greedy choice. A one-token pass and a batch are then
two different computations.

Built without llamafile (``-DGGML_LLAMAFILE=OFF``, the Makefile's build) and with the
weights used as the file stores them (no repacking), every batch of up to
:data:`INVARIANT_BATCH` rows takes the same kernel as a one-token pass, so fast-forward's
batches of forced tokens leave greedy output token for token as one-by-one decoding makes it.
Not repacking also spares the copy-and-interleave of every weight at load, most of a cold
load; the repacked kernels decode faster, which a long-lived process may prefer
(``repack=True``). A model test checks both claims against the installed build, so a
llama.cpp upgrade that changes its kernels fails there, not in a user's trace.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from functools import cache

__all__ = ["INVARIANT_BATCH", "KV_TYPES", "batch_invariant", "build_id", "system_info", "weights_in_place"]

INVARIANT_BATCH = 7
"""The most rows a batch may have and still take the one-token kernels (tiled from 8)."""

KV_TYPES = {"f16": 1, "q8_0": 8, "q4_0": 2}
"""KV cache element types by name, as ggml numbers them (``GGML_TYPE_F16``, ``_Q8_0``, ``_Q4_0``).
A quantized cache is smaller and reads faster deep in a long context; its values, and so
greedy output, differ from ``f16``'s. llama.cpp quantizes the V cache only under flash attention."""

_params_lock = threading.Lock()


@cache
def system_info() -> str:
    """llama.cpp's build flags as it reports them (``AVX2 = 1 | ... | LLAMAFILE = 1 | ...``)."""
    import llama_cpp

    return llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()


def batch_invariant(*, repack: bool) -> bool:
    """Whether batches of up to INVARIANT_BATCH rows compute what one-token passes compute."""
    return not repack and "LLAMAFILE = 1" not in system_info()


def build_id(*, repack: bool, flash_attn: bool = False, kv_type: str = "f16") -> str:
    """The llama-cpp-python version, its build flags, the weight layout and the attention kernels
    and KV type: what a KV state's numbers depend on beyond the model and the tokens (a
    prefix-cache key part; the defaults add nothing, so keys made before them still match).
    """
    import llama_cpp

    flags = hashlib.sha256(system_info().encode()).hexdigest()[:12]
    extra = ("+repack" if repack else "") + ("+fa" if flash_attn else "") + (f"+kv-{kv_type}" if kv_type != "f16" else "")
    return f"{llama_cpp.__version__}+{flags}{extra}"


@contextlib.contextmanager
def weights_in_place(enabled: bool) -> Iterator[None]:
    """While a ``Llama`` is constructed, load its weights without repacking them.

    llama-cpp-python builds its model parameters from ``llama_model_default_params()`` inside
    ``Llama.__init__`` and takes no argument for ``use_extra_bufts``; the defaults are
    wrapped for the duration of one construction (under a lock: the wrapper is process-wide).
    """
    if not enabled:
        yield
        return
    import llama_cpp.llama_cpp as lib

    with _params_lock:
        original = lib.llama_model_default_params

        def defaults() -> lib.llama_model_params:
            params = original()
            params.use_extra_bufts = False
            return params

        lib.llama_model_default_params = defaults
        try:
            yield
        finally:
            lib.llama_model_default_params = original
