"""What a GGUF model file says about itself, and its sha256 without hashing it on every load."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from .store import file_sha256

__all__ = ["cached_sha256", "quant_type_name"]

logger = logging.getLogger(__name__)

# llama_ftype values as written to GGUF `general.file_type` (llama.h).
_FTYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 25: "IQ4_NL", 30: "IQ4_XS", 32: "BF16",
}


def quant_type_name(metadata: dict[str, str]) -> str | None:
    """Quantization name from GGUF metadata, or None if the file does not say."""
    raw = metadata.get("general.file_type")
    if raw is None:
        return None
    try:
        return _FTYPES.get(int(raw), f"ftype_{raw}")
    except ValueError:
        return raw


def cached_sha256(path: Path) -> str:
    """sha256 of a model file, cached beside it keyed by size and mtime (hashing 1 GB takes seconds)."""
    st = path.stat()
    stamp = path.with_name(path.name + ".sha256.json")
    try:
        record = json.loads(stamp.read_text())
        if record["size"] == st.st_size and record["mtime_ns"] == st.st_mtime_ns:
            return str(record["sha256"])
    except (OSError, ValueError, KeyError):
        pass
    sha = file_sha256(path)
    try:
        tmp = stamp.with_suffix(".tmp")
        tmp.write_text(json.dumps({"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))
        os.replace(tmp, stamp)
    except OSError:
        logger.debug("cannot cache sha256 beside %s (read-only?)", path)
    return sha
