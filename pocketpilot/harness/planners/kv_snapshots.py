"""Each conversation keeps its own KV cache when several share one model.

A ``Llama`` holds one sequence: with four phones on one event loop, every step would evaluate
its whole context again, because the previous step was another phone's. Here the sequence a
step is about to replace is saved first (llama.cpp's per-sequence state: only the used cells),
and a step whose prompt continues a saved sequence further than the live one gets that
sequence back. One conversation alone never saves anything: the live cache already matches.

Snapshots are files in a private temporary directory, so they cost page cache rather than the
process's resident memory, bounded in bytes with the least recently used dropped first.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

__all__ = ["KvSnapshots", "common_prefix"]


class KvSnapshots:
    """Saved sequences: their tokens, and the state file that restores them."""

    def __init__(self, max_bytes: int = 512 << 20, *, min_gain: int = 32) -> None:
        self.max_bytes = max_bytes
        self.min_gain = min_gain
        """Restore only when it saves more than this many tokens of evaluation."""
        self._dir: Path | None = None
        self._saved: OrderedDict[str, tuple[tuple[int, ...], Path, int]] = OrderedDict()
        self._count = 0

    def best(self, tokens: list[int], live: int) -> tuple[str, tuple[int, ...]] | None:
        """The saved sequence sharing the longest prefix with ``tokens``, if it beats the live one."""
        found, length = None, live + self.min_gain
        for key, (saved, _, _) in self._saved.items():
            n = common_prefix(saved, tokens)
            if n > length:
                found, length = key, n
        if found is None:
            return None
        self._saved.move_to_end(found)
        return found, self._saved[found][0]

    def payload(self, key: str) -> bytearray:
        """The saved state under ``key``, read into a writable buffer llama.cpp can load in place."""
        path = self._saved[key][1]
        with path.open("rb") as fh:
            data = bytearray(os.fstat(fh.fileno()).st_size)
            fh.readinto(data)
        return data

    def save(self, tokens: list[int], payload: bytes | memoryview) -> None:
        """Keep a sequence (replacing any saved one it extends or that extends it)."""
        if not tokens or not payload:
            return
        t = tuple(tokens)
        for key, (saved, path, _) in list(self._saved.items()):
            if common_prefix(saved, t) == min(len(saved), len(t)):  # one is a prefix of the other
                path.unlink(missing_ok=True)
                del self._saved[key]
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="pp-kv-"))
        self._count += 1
        path = self._dir / f"{self._count}.kv"
        path.write_bytes(payload)
        self._saved[str(self._count)] = (t, path, len(payload))
        total = sum(size for _, _, size in self._saved.values())
        while total > self.max_bytes and len(self._saved) > 1:
            _, (_, old, size) = self._saved.popitem(last=False)
            old.unlink(missing_ok=True)
            total -= size

    def __len__(self) -> int:
        return len(self._saved)

    def close(self) -> None:
        """Remove every snapshot (the directory is private to this planner)."""
        self._saved.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two sequences share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
