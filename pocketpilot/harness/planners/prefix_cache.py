"""The stable prefix's KV state on disk, so a new process starts warm.

Every request a planner serves begins with the same system message (rules, tool specs,
guidance). Evaluating it is most of a cold first step; restoring its KV cells from disk costs
milliseconds. llama.cpp's per-sequence state API stores only the cells in use, so a state
grows with the prefix, not with ``n_ctx``.

A state is valid only for the exact model file, context geometry, prefix tokens and
llama.cpp build that made it: all of those are in the key, and each file carries the key and a
checksum of its payload. A corrupt, truncated or mismatched file is ignored (with a warning)
and removed: the prefix is evaluated again, never restored wrong.

The same directory keeps the other thing a new process would otherwise recompute from the
model file, the vocabulary's token pieces (:mod:`.vocabulary`), under the same checks.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DEFAULT_MAX_BYTES", "PrefixCache", "PrefixKey", "default_cache_dir"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 1 << 30
_MAGIC = b"PPKV1\n"


def default_cache_dir() -> Path:
    """``$POCKETPILOT_HOME/kv-prefix`` (the user cache by default)."""
    from ...models.store import pocketpilot_home

    return pocketpilot_home() / "kv-prefix"


@dataclass(frozen=True)
class PrefixKey:
    """What a saved prefix state depends on; any difference means another file."""

    model_sha256: str
    n_ctx: int
    n_batch: int
    llama_cpp_version: str
    tokens_sha256: str
    n_tokens: int

    @classmethod
    def of(cls, model_sha256: str, n_ctx: int, n_batch: int, version: str, tokens: Sequence[int]) -> PrefixKey:
        """The key of ``tokens`` evaluated under this model and context: the tokens enter as a digest."""
        raw = b"".join(int(t).to_bytes(4, "little", signed=True) for t in tokens)
        return cls(model_sha256, n_ctx, n_batch, version, hashlib.sha256(raw).hexdigest(), len(tokens))

    @property
    def name(self) -> str:
        """The state's file name: a digest of every field, so any change of model or context misses."""
        blob = json.dumps(self.__dict__, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:32] + ".kv"


class PrefixCache:
    """Prefix states in a directory, least recently used evicted past ``max_bytes``."""

    def __init__(self, root: Path | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()
        self.max_bytes = max_bytes

    def load(self, key: Any) -> bytearray | None:
        """The saved payload for ``key``, or None (missing, or unusable and now removed).

        The payload is read straight into a writable buffer, which llama.cpp's state API
        takes without another copy (a long prefix's state is hundreds of MB).
        """
        path = self.root / key.name
        try:
            with path.open("rb") as fh:
                if fh.readline() != _MAGIC:
                    raise ValueError("not a prefix state file")
                header = json.loads(fh.readline())
                size = header.get("size")
                if not isinstance(size, int) or size < 0 or size > path.stat().st_size:
                    raise ValueError(f"a payload size of {size!r} does not fit the file")
                payload = bytearray(size)
                if fh.readinto(payload) != size or fh.read(1):
                    raise ValueError("truncated or longer than its header says")
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            return self._discard(path, f"unreadable ({exc})")
        if header.get("key") != key.__dict__:
            return self._discard(path, "its key does not match (another model, geometry or build)")
        if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
            return self._discard(path, "truncated or corrupt (checksum mismatch)")
        try:
            os.utime(path)  # most recently used
        except OSError:
            pass
        return payload

    def save(self, key: Any, payload: bytes | bytearray | memoryview) -> Path:
        """Write atomically (a crash never leaves a file that looks valid), then evict."""
        self.root.mkdir(parents=True, exist_ok=True)
        header = {"key": key.__dict__, "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".kv-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC)
                fh.write(json.dumps(header, sort_keys=True).encode() + b"\n")
                fh.write(payload)
            os.replace(tmp, self.root / key.name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.evict()
        return self.root / key.name

    def entries(self) -> list[tuple[Path, int]]:
        """Saved states, oldest use first, with their sizes."""
        if not self.root.is_dir():
            return []
        found = []
        for path in (*self.root.glob("*.kv"), *self.root.glob("*.vocab")):
            try:
                st = path.stat()
            except OSError:
                continue
            found.append((st.st_mtime, path, st.st_size))
        return [(p, size) for _, p, size in sorted(found)]

    def size(self) -> int:
        """Bytes the saved states take on disk."""
        return sum(size for _, size in self.entries())

    def evict(self) -> list[Path]:
        """Remove least recently used states until the total fits ``max_bytes``."""
        entries = self.entries()
        total = sum(size for _, size in entries)
        removed = []
        for path, size in entries:
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size
            removed.append(path)
        return removed

    def clear(self) -> int:
        """Remove every saved state; returns how many bytes that freed."""
        freed = 0
        for path, size in self.entries():
            path.unlink(missing_ok=True)
            freed += size
        return freed

    @staticmethod
    def _discard(path: Path, why: str) -> None:
        logger.warning("ignoring cached %s: %s; it is computed again", path.name, why)
        path.unlink(missing_ok=True)
        return None
