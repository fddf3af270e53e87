"""The decode memo: a greedy planner's output for one prompt, decoded once and served again from a file.

Measuring a candidate revision of η reruns the whole evolve sample, and most of those runs
repeat the baseline exactly: a candidate (an experience entry, a tool's text, a note) changes
the prompt of only the steps it reaches, and a greedy decode of an unchanged prompt gives the
same output. :class:`MemoPlanner` wraps a planner and keys each decode by a hash of everything
that decode reads (see :meth:`DecodeMemo.key`); a hit returns the stored output, a miss decodes
and stores. A rerun then decodes only from the step where its prompt first differs.

When it memoizes, and why only then:

- **Greedy only.** A sampled decode (temperature above zero) draws from a distribution: the
  same prompt may rightly give another output, and serving a stored one would turn every
  later sample into a copy of the first.
- **Only a planner that vouches.** The planner must implement :class:`VouchesDecoding` and
  answer for the request: it names everything its decode reads besides the request (the
  rendered prompt, the grammar, the weights' sha256, the evaluation settings), or None when
  its output is not a function of those. A planner without the method (a scripted replay,
  whose output follows its script's position; a remote server, whose kernels, batching and
  version nobody here can see) is never memoized. The weights must be named by their sha256.
- **Never a cancelled turn**: it is no output of the prompt. A turn that failed to parse is
  stored and raised again on a hit: a greedy decode fails the same way each time.

A turn served from the memo says so (``PlannerTurn.memo``): its ``latency_s`` is the lookup's,
and its seconds and evaluation counts are zero, so no latency figure counts a decode that did
not happen. Latency benchmarks never use the memo; evolve does by default, the bench runner and
the ablation on request (``--decode-memo PATH``).

The file is append-only JSONL, one record a line, each written with one ``write`` and flushed.
A killed process can leave its last line cut short (no newline): that fragment is skipped and
cut off before the next append, since a record is a cache entry and its decode simply runs
again. A *complete* line that does not parse was not written by a kill (another format version,
an edit, a damaged disk), and raises :class:`DecodeMemoError` naming the file and line: the
memo cannot tell which of its entries are still sound, and a run that went on would serve them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError

from ...contracts import Action, PlannerInfo, PlannerTurn, digest
from ...errors import ContractError, PlannerOutputError
from ..base import Planner, PlannerOutput, PlanRequest

__all__ = ["MEMO_FORMAT", "DecodeMemo", "DecodeMemoError", "MemoPlanner", "MemoStats", "VouchesDecoding"]

logger = logging.getLogger(__name__)

MEMO_FORMAT = 1
"""Version of the record and of the key; part of every key, so a new format never serves an old entry."""


class DecodeMemoError(ContractError):
    """A decode memo file with a complete line that does not parse (see the module docstring)."""

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        super().__init__(f"decode memo {path}:{line}: {reason} (delete the file, or run without the memo)")
        self.path, self.line, self.reason = str(path), line, reason


@runtime_checkable
class VouchesDecoding(Protocol):
    """A planner whose greedy output is a function of what it names (the memo's condition)."""

    def decode_identity(self, request: PlanRequest) -> Mapping[str, Any] | None:
        """Everything the decode of ``request`` reads besides the request (prompt, grammar,
        weights, settings), JSON-serializable; None when the planner cannot vouch that the
        same values give the same output. Called after ``load()``.
        """
        ...


class _Record(BaseModel):
    """One line of the file: a decode's output, or the reason it did not parse."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: int
    key: str
    turn: PlannerTurn
    action: Action | None = None
    error: str | None = None
    """The parse error's reason (``action`` is then None)."""


@dataclass
class MemoStats:
    """What the memo did, for a line per run set and the report."""

    hits: int = 0
    misses: int = 0
    bypassed: int = 0
    """Decodes the memo could not key (sampling, or a planner that cannot vouch)."""
    saved_s: float = 0.0
    """The recorded latency of the decodes hits stood in for."""

    def line(self) -> str:
        """One line for a log."""
        return (f"decode memo: {self.hits} hit(s), {self.misses} decode(s) stored, {self.bypassed} not memoizable; "
                f"about {self.saved_s:.0f}s of decoding not repeated")

    def since(self, before: MemoStats) -> MemoStats:
        """The counts added after ``before`` (a copy taken earlier)."""
        return MemoStats(self.hits - before.hits, self.misses - before.misses, self.bypassed - before.bypassed,
                         self.saved_s - before.saved_s)

    def copy(self) -> MemoStats:
        """A snapshot."""
        return MemoStats(self.hits, self.misses, self.bypassed, self.saved_s)


class DecodeMemo:
    """The memo's file and its entries in memory (loaded once; appended as decodes finish).

    Args:
        path: the JSONL file (created on the first store; its folder too).

    Raises:
        DecodeMemoError: a complete line that does not parse.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.stats = MemoStats()
        self._entries: dict[str, _Record] = {}
        self._lock = threading.Lock()
        self._cut_at: int | None = None
        """Where a cut-short last line begins (cut off before the next append)."""
        self._load()

    def __len__(self) -> int:
        return len(self._entries)

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise DecodeMemoError(self.path, 0, f"cannot be read: {exc}") from exc
        offset = 0
        for number, line in enumerate(data.splitlines(keepends=True), 1):
            if not line.endswith(b"\n"):  # a kill mid-write: the last line, cut short
                logger.warning("decode memo %s: line %d was cut short (a killed run); skipped", self.path, number)
                self._cut_at = offset
                break
            offset += len(line)
            if not line.strip():
                continue
            try:
                record = _Record.model_validate_json(line)
            except ValidationError as exc:
                raise DecodeMemoError(self.path, number, f"not a memo record: {exc.errors()[0]['msg']}") from exc
            if record.v != MEMO_FORMAT:
                raise DecodeMemoError(self.path, number, f"format {record.v}, this version reads {MEMO_FORMAT}")
            self._entries[record.key] = record

    @staticmethod
    def key(info: PlannerInfo, identity: Mapping[str, Any], request: PlanRequest) -> str:
        """The hash of everything a decode reads: the planner's identity (backend, weights' sha256,
        sampler with ``max_tokens``, output mode, evaluation settings), what the planner names
        (rendered prompt, grammar), and the whole request (messages, tools, kinds, skills, batch
        groups, answers), under :data:`MEMO_FORMAT`.
        """
        return digest({"memo": MEMO_FORMAT, "info": info.model_dump(mode="json"), "identity": dict(identity),
                       "request": request.model_dump(mode="json")})

    def get(self, key: str) -> _Record | None:
        """The stored record of ``key``, if any."""
        return self._entries.get(key)

    def put(self, record: _Record) -> None:
        """Store ``record`` in memory and append it to the file (one write, flushed)."""
        line = record.model_dump_json() + "\n"
        with self._lock:
            self._entries[record.key] = record
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self._cut_at is not None:
                with self.path.open("r+b") as fh:
                    fh.truncate(self._cut_at)
                self._cut_at = None
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()


class MemoPlanner:
    """A planner whose greedy decodes go through a :class:`DecodeMemo` (see the module docstring).

    Everything else (``info``, ``count_tokens``, ``load``, ``aclose``, the backend's own
    attributes) is the wrapped planner's.
    """

    def __init__(self, planner: Planner, memo: DecodeMemo) -> None:
        self.planner = planner
        self.memo = memo

    @property
    def info(self) -> PlannerInfo:
        """The wrapped planner's identity (traces record it unchanged)."""
        return self.planner.info

    def count_tokens(self, text: str) -> int:
        """The wrapped planner's count."""
        return self.planner.count_tokens(text)

    async def load(self) -> None:
        """Load the wrapped planner."""
        await self.planner.load()

    async def aclose(self) -> None:
        """Release the wrapped planner."""
        await self.planner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.planner, name)

    def _key(self, request: PlanRequest) -> str | None:
        """The memo key of ``request``, or None where the decode may not be memoized (module docstring)."""
        info = self.planner.info
        if info.sampler.temperature != 0 or not info.model_sha256 or not isinstance(self.planner, VouchesDecoding):
            return None
        identity = self.planner.decode_identity(request)
        return None if identity is None else self.memo.key(info, identity, request)

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        """The stored output of this decode when there is one, else the wrapped planner's (stored)."""
        t0 = time.monotonic()
        await self.planner.load()
        key = self._key(request)
        stats = self.memo.stats
        if key is None:
            stats.bypassed += 1
            return await self.planner.plan(request)
        record = self.memo.get(key)
        if record is not None:
            stats.hits += 1
            stats.saved_s += record.turn.latency_s
            turn = _served(record.turn, time.monotonic() - t0)
            if record.action is None:
                raise PlannerOutputError(turn.raw, record.error or "stored as unparseable", turn)
            return PlannerOutput(action=record.action, turn=turn)
        try:
            out = await self.planner.plan(request)
        except PlannerOutputError as exc:
            turn = exc.turn if isinstance(exc.turn, PlannerTurn) else PlannerTurn(raw=exc.raw, finish_reason="error")
            if turn.finish_reason != "cancelled":
                stats.misses += 1
                await asyncio.to_thread(self.memo.put, _Record(v=MEMO_FORMAT, key=key, turn=turn, error=exc.reason))
            raise
        if out.turn.finish_reason != "cancelled":
            stats.misses += 1
            await asyncio.to_thread(self.memo.put, _Record(v=MEMO_FORMAT, key=key, turn=out.turn, action=out.action))
        return out


def _served(turn: PlannerTurn, lookup_s: float) -> PlannerTurn:
    """``turn`` as served from the memo: marked, its latency the lookup's, no decode work counted."""
    return turn.model_copy(update={
        "memo": True, "latency_s": lookup_s, "decode_s": 0.0, "prefix_s": 0.0, "constraint_s": 0.0,
        "prompt_tokens_evaluated": 0, "decode_passes": 0, "kv_reused": 0, "eval_splits": [], "prefix": "none",
        "phases": [p.model_copy(update={"decode_s": 0.0, "passes": 0}) for p in turn.phases],
    })
