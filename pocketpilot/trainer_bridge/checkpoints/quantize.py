"""Quantize a GGUF model with llama.cpp, never leaving a partial file behind.

``llama_model_quantize`` writes its output as it goes and leaves a partial file when it fails
(FACTS.md), and llama.cpp aborts the whole process on some malformed inputs. So it runs in a
child process, writes to a temporary name beside the destination, and the result is renamed
into place only after the child exits cleanly and the output parses as a complete GGUF.
Already-quantized input needs ``allow_requantize``; it is set from the input's file type.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .errors import CheckpointIntegrityError, QuantizeError
from .gguf_info import read_gguf_info

__all__ = ["QUANT_TYPES", "ftype_for", "quantize_gguf"]

logger = logging.getLogger(__name__)

QUANT_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_0", "Q5_1",
               "Q4_K_M", "Q4_K_S", "Q4_0", "Q4_1", "Q3_K_M", "Q3_K_S", "Q3_K_L", "Q2_K", "IQ4_NL", "IQ4_XS")
"""Target names accepted by :func:`quantize_gguf` (llama.cpp's ``LLAMA_FTYPE_*``)."""

_UNQUANTIZED = {0, 1, 32}  # llama_ftype F32, F16, BF16


def ftype_for(name: str) -> int:
    """The llama_ftype value for a quantization name such as ``Q4_K_M``.

    Raises:
        QuantizeError: for a name llama.cpp does not know.
    """
    import llama_cpp

    key = name.upper()
    attr = "LLAMA_FTYPE_ALL_F32" if key == "F32" else f"LLAMA_FTYPE_MOSTLY_{key}"
    value = getattr(llama_cpp, attr, None)
    if key not in QUANT_TYPES or value is None:
        raise QuantizeError(f"unknown quantization {name!r}; choose one of {', '.join(QUANT_TYPES)}")
    return int(value)


def quantize_gguf(
    src: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    quant: str,
    *,
    threads: int | None = None,
    timeout_s: float = 3600.0,
) -> Path:
    """Quantize ``src`` to ``dest`` (atomic: ``dest`` appears whole or not at all).

    Raises:
        QuantizeError: llama.cpp failed, crashed or timed out.
        CheckpointIntegrityError: the input is not a complete GGUF model.
    """
    src, dest = Path(src), Path(dest)
    info = read_gguf_info(src)
    if info.kind != "model":
        raise QuantizeError(f"{src}: only models are quantized; a LoRA adapter is applied as it is")
    ftype = ftype_for(quant)
    requantize = info.file_type is not None and info.file_type not in _UNQUANTIZED
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    cmd = [sys.executable, "-m", __name__, os.fspath(src), tmp_name, str(ftype),
           "1" if requantize else "0", str(threads or os.cpu_count() or 1)]
    try:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)  # noqa: S603
        except subprocess.TimeoutExpired as exc:
            raise QuantizeError(f"quantizing {src.name} to {quant} timed out after {timeout_s:.0f}s") from exc
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise QuantizeError(
                f"llama.cpp could not quantize {src.name} to {quant} (exit {proc.returncode}): {' | '.join(tail)}"
            )
        try:
            read_gguf_info(tmp)
        except CheckpointIntegrityError as exc:
            raise QuantizeError(f"llama.cpp wrote an incomplete file: {exc.reason}") from exc
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    logger.info("quantized %s -> %s (%s)", src.name, dest.name, quant)
    return dest


def _child(argv: list[str]) -> int:
    """Run one quantization in this (child) process; exit status is llama.cpp's."""
    import llama_cpp

    src, out, ftype, requantize, threads = argv
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = int(ftype)
    params.allow_requantize = requantize == "1"
    params.nthread = int(threads)
    return int(llama_cpp.llama_model_quantize(src.encode(), out.encode(), params))


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
