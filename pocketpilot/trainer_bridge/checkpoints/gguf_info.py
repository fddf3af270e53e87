"""What a GGUF file claims to be: metadata, tokenizer fingerprint, tensor table, completeness.

Why not ``gguf.GGUFReader``: it builds a numpy view per array element, so the 151,936-entry
token list and the merges of the 0.5B Qwen2 model take ~20 s of CPU (measured) before one key
can be read. This reader streams the same format over ``mmap`` with ``struct``, takes the tensor
block sizes from the ``gguf`` package (``GGML_QUANT_SIZES``), hashes the token list instead of
keeping it, and reads the 0.5B header in 1-2 s on a busy 2-core machine.

Completeness: the tensor table says where every tensor ends; a file shorter than the furthest
end (a copy cut short, an interrupted download) is rejected here, before llama.cpp sees it.
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import UsageError
from .errors import CheckpointIntegrityError

__all__ = ["GgufInfo", "TensorInfo", "TokenizerFingerprint", "read_gguf_info"]

logger = logging.getLogger(__name__)

_MAGIC = b"GGUF"
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_HASHED_ARRAYS = {"tokenizer.ggml.tokens", "tokenizer.ggml.merges"}
_MAX_DIMS = 8


@dataclass(frozen=True)
class TensorInfo:
    """One entry of the tensor table (``shape`` in GGML order: ne[0] first)."""

    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class TokenizerFingerprint:
    """Enough of the tokenizer to tell two vocabularies apart without keeping them."""

    model: str | None
    pre: str | None
    vocab_size: int
    tokens_sha256: str | None

    def differences(self, other: TokenizerFingerprint) -> list[str]:
        """Human-readable fields that differ (empty when the tokenizers match)."""
        out = []
        for name in ("model", "pre", "vocab_size", "tokens_sha256"):
            a, b = getattr(self, name), getattr(other, name)
            if a != b:
                out.append(f"tokenizer {name} {a!r} != {b!r}")
        return out


@dataclass(frozen=True)
class GgufInfo:
    """Header facts of one GGUF file."""

    path: Path
    size: int
    version: int
    metadata: dict[str, Any]
    """Every scalar/string key; arrays appear as their length (token lists are hashed)."""
    tensors: dict[str, TensorInfo] = field(repr=False)
    data_offset: int
    tokenizer: TokenizerFingerprint | None

    @property
    def architecture(self) -> str | None:
        """``general.architecture`` (e.g. ``qwen2``)."""
        value = self.metadata.get("general.architecture")
        return str(value) if value is not None else None

    @property
    def kind(self) -> str:
        """``model`` or ``adapter`` (files without ``general.type`` are models)."""
        return "adapter" if self.metadata.get("general.type") == "adapter" else "model"

    @property
    def file_type(self) -> int | None:
        """``general.file_type`` (llama_ftype), if present."""
        value = self.metadata.get("general.file_type")
        return int(value) if value is not None else None

    @property
    def data_end(self) -> int:
        """Byte offset just past the last tensor's data."""
        ends = [self.data_offset + t.offset + t.nbytes for t in self.tensors.values()]
        return max(ends, default=self.data_offset)


class _Cursor:
    def __init__(self, buf: mmap.mmap, path: Path) -> None:
        self.buf, self.pos, self.path = buf, 0, path

    def fail(self, reason: str) -> CheckpointIntegrityError:
        return CheckpointIntegrityError(str(self.path), reason)

    def take(self, n: int) -> int:
        start = self.pos
        if n < 0 or start + n > len(self.buf):
            raise self.fail(f"truncated header: needs {n} bytes at offset {start}, file has {len(self.buf)}")
        self.pos += n
        return start

    def scalar(self, code: int) -> Any:
        fmt = _SCALARS[code]
        start = self.take(struct.calcsize(fmt))
        return struct.unpack_from(fmt, self.buf, start)[0]

    def u32(self) -> int:
        return int(self.scalar(4))

    def u64(self) -> int:
        return int(self.scalar(10))

    def raw_string(self) -> bytes:
        n = self.u64()
        start = self.take(n)
        return self.buf[start : start + n]

    def string(self) -> str:
        raw = self.raw_string()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"invalid UTF-8 string at offset {self.pos - len(raw)}") from exc

    def value(self, code: int, key: str) -> Any:
        if code in _SCALARS:
            return self.scalar(code)
        if code == _STRING:
            return self.string()
        if code == _ARRAY:
            return self.array(key)
        raise self.fail(f"unknown value type {code} for key {key!r}")

    def array(self, key: str) -> Any:
        code, count = self.u32(), self.u64()
        if code in _SCALARS:
            size = struct.calcsize(_SCALARS[code])
            start = self.take(size * count)
            if count <= 64:  # small arrays (e.g. per-layer head counts) are kept
                return list(struct.unpack_from(f"<{count}{_SCALARS[code][1]}", self.buf, start))
            return {"len": count}
        if code == _STRING:
            digest = hashlib.sha256() if key in _HASHED_ARRAYS else None
            for _ in range(count):
                n = self.u64()
                start = self.take(n)
                if digest is not None:
                    digest.update(struct.pack("<Q", n))
                    digest.update(self.buf[start : start + n])
            return {"len": count, "sha256": digest.hexdigest() if digest else None}
        if code == _ARRAY:
            raise self.fail(f"nested arrays are not supported (key {key!r})")
        raise self.fail(f"unknown array element type {code} for key {key!r}")


def _block_sizes() -> dict[int, tuple[int, int]]:
    """ggml type code -> (block size, bytes per block), from the ``gguf`` package."""
    try:
        from gguf import GGML_QUANT_SIZES
    except ImportError as exc:  # an optional dependency; the rest of the SDK runs without it
        raise UsageError("reading GGUF checkpoints needs the `gguf` package: pip install gguf") from exc
    return {int(k): v for k, v in GGML_QUANT_SIZES.items()}


def _tensor_nbytes(shape: tuple[int, ...], ggml_type: int, cursor: _Cursor, name: str,
                   sizes: dict[int, tuple[int, int]]) -> int:
    try:
        block, type_size = sizes[ggml_type]
    except (ValueError, KeyError) as exc:
        raise cursor.fail(f"tensor {name!r} has unknown ggml type {ggml_type}") from exc
    elements = 1
    for dim in shape:
        elements *= dim
    if shape and shape[0] % block:
        raise cursor.fail(f"tensor {name!r}: first dimension {shape[0]} is not a multiple of block {block}")
    return elements // block * type_size


def read_gguf_info(path: str | os.PathLike[str]) -> GgufInfo:
    """Parse a GGUF header and tensor table, and check the file holds every tensor's data.

    Raises:
        CheckpointIntegrityError: not GGUF, an unsupported version, a corrupt header, or a file
            shorter than its tensor table says (truncated).
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        fh = path.open("rb")
    except OSError as exc:
        raise CheckpointIntegrityError(str(path), f"cannot read: {exc.strerror}") from exc
    with fh:
        if size < 24:
            raise CheckpointIntegrityError(str(path), f"only {size} bytes: not a GGUF file")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _parse(buf, path, size)


def _parse(buf: mmap.mmap, path: Path, size: int) -> GgufInfo:
    cur = _Cursor(buf, path)
    if buf[:4] != _MAGIC:
        raise cur.fail("not a GGUF file (bad magic)")
    cur.pos = 4
    version = cur.u32()
    if version not in (2, 3):
        raise cur.fail(f"unsupported GGUF version {version}")
    n_tensors, n_kv = cur.u64(), cur.u64()
    if n_tensors > 1_000_000 or n_kv > 1_000_000:
        raise cur.fail(f"implausible header counts ({n_tensors} tensors, {n_kv} keys): corrupt file")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cur.string()
        metadata[key] = cur.value(cur.u32(), key)
    sizes = _block_sizes()
    tensors: dict[str, TensorInfo] = {}
    for _ in range(n_tensors):
        name = cur.string()
        n_dims = cur.u32()
        if n_dims > _MAX_DIMS:
            raise cur.fail(f"tensor {name!r} claims {n_dims} dimensions: corrupt file")
        shape = tuple(cur.u64() for _ in range(n_dims))
        ggml_type, offset = cur.u32(), cur.u64()
        tensors[name] = TensorInfo(name, shape, ggml_type, offset, _tensor_nbytes(shape, ggml_type, cur, name, sizes))
    alignment = int(metadata.get("general.alignment", 32))
    data_offset = -(-cur.pos // alignment) * alignment
    tokens = metadata.get("tokenizer.ggml.tokens")
    tokenizer = None
    if isinstance(tokens, dict):
        tokenizer = TokenizerFingerprint(
            model=metadata.get("tokenizer.ggml.model"),
            pre=metadata.get("tokenizer.ggml.pre"),
            vocab_size=int(tokens["len"]),
            tokens_sha256=tokens.get("sha256"),
        )
    info = GgufInfo(path, size, version, metadata, tensors, data_offset, tokenizer)
    if info.data_end > size:
        raise cur.fail(f"truncated: tensor data ends at byte {info.data_end} but the file has {size} bytes")
    return info
