"""A session's event stream: the records of its runs' trace files, plus the service's own events.

The trace file stays the one record of a run. :class:`TraceTail` reads each run's file as it
grows and appends every complete line, as it is, to the session's :class:`EventLog` (event
``header``, ``step`` or ``end``): what a client sees of a step is the line the trace holds,
byte for byte, never a second rendering that could drift from it. The service adds what no
trace holds: that a request was accepted, a pending question and its answer, the session's
state and errors.

Every event has a number, one more than the one before, in one session. A client that
reconnects with ``Last-Event-ID: n`` gets every event after ``n``, each exactly once, from the
log. The log keeps its newest events in memory (``max_in_memory``); of an older one it keeps
where its line is in the trace (file, offset, length) when it came from a trace, and the event
itself when the service said it (a state, a question: a few small events a run). A reconnect
from before the window reads those lines back from the trace, the record they came from.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["EventLog", "ServeEvent", "TraceLine", "TraceTail", "sse_frame"]

logger = logging.getLogger(__name__)

KEEPALIVE_S = 15.0
"""A comment line this often keeps proxies from closing an idle stream and finds dead clients."""


@dataclass(frozen=True)
class ServeEvent:
    """One event: its number, its name and its data (one JSON text)."""

    id: int
    event: str
    data: str


@dataclass(frozen=True, slots=True)
class TraceLine:
    """Where an event's data is in a trace file: what the log keeps of it past its window."""

    id: int
    event: str
    path: Path
    offset: int
    length: int

    def read(self) -> ServeEvent:
        """The event again, its data read back from the trace (a ``gap`` event if it is gone)."""
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                raw = fh.read(self.length)
            if len(raw) != self.length:
                raise OSError("the trace is shorter than when the line was read")
            return ServeEvent(self.id, self.event, raw.decode("utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            logger.warning("%s: event %d could not be read back: %s", self.path, self.id, exc)
            return ServeEvent(self.id, "gap", json.dumps({"event": self.event, "trace": self.path.name,
                                                          "reason": str(exc)}))


def sse_frame(event: ServeEvent) -> bytes:
    """The event in the Server-Sent Events wire format (data is one line of JSON)."""
    return f"id: {event.id}\nevent: {event.event}\ndata: {event.data}\n\n".encode()


class EventLog:
    """The append-only events of one session; readers wait for the next one.

    Args:
        max_in_memory: how many of the newest events are kept whole (None: all). Older trace
            lines are read back from their trace when a reader asks for them.
    """

    def __init__(self, max_in_memory: int | None = None) -> None:
        if max_in_memory is not None and max_in_memory < 1:
            raise ValueError(f"max_in_memory must be at least 1, not {max_in_memory}")
        self.max_in_memory = max_in_memory
        self._window: deque[ServeEvent] = deque()
        self._older: list[ServeEvent | TraceLine] = []
        """Events before the window: service events whole, trace lines by where they are (``_older[i].id == i + 1``)."""
        self._sources: dict[int, tuple[Path, int, int]] = {}
        """Where the window's trace-line events are in their trace (kept when they leave the window)."""
        self._changed: asyncio.Event | None = None
        self.closed = False
        self.readers = 0
        """Streams following the log now."""
        self.last_append = time.monotonic()

    def _signal(self) -> asyncio.Event:
        # created on first use, inside the loop (no loop-bound primitive in __init__)
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def __len__(self) -> int:
        return len(self._older) + len(self._window)

    @property
    def in_memory(self) -> int:
        """Events kept whole in the window."""
        return len(self._window)

    @property
    def last_id(self) -> int:
        """The newest event's number (0: none yet)."""
        return len(self)

    def append(self, event: str, data: dict[str, Any] | str, *, source: tuple[Path, int, int] | None = None) -> ServeEvent:
        """Add an event (``data`` a dict, or a JSON text kept as it is) and wake the readers.

        ``source``: the trace file, offset and length the data was read from (a trace line).
        """
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        item = ServeEvent(len(self) + 1, event, text)
        self._window.append(item)
        if source is not None:
            self._sources[item.id] = source
        while self.max_in_memory is not None and len(self._window) > self.max_in_memory:
            old = self._window.popleft()
            where = self._sources.pop(old.id, None)
            self._older.append(old if where is None else TraceLine(old.id, old.event, *where))
        self.last_append = time.monotonic()
        changed, self._changed = self._signal(), asyncio.Event()
        changed.set()
        return item

    async def get(self, event_id: int) -> ServeEvent:
        """Event ``event_id`` (1 to :attr:`last_id`), from memory or read back from its trace."""
        older = len(self._older)
        if event_id > older:
            return self._window[event_id - older - 1]
        kept = self._older[event_id - 1]
        return kept if isinstance(kept, ServeEvent) else await asyncio.to_thread(kept.read)

    def close(self) -> None:
        """No more events: readers finish once they have read everything."""
        self.closed = True
        self._signal().set()

    async def follow(self, after: int, *, keepalive_s: float = KEEPALIVE_S) -> AsyncIterator[ServeEvent | None]:
        """Every event after ``after``, then each new one as it comes; None for a keep-alive.

        Ends when the log is closed and read to the end.
        """
        cursor = max(after, 0)
        self.readers += 1
        try:
            while True:
                waiting = self._signal()
                while cursor < self.last_id:
                    item = await self.get(cursor + 1)
                    cursor += 1
                    yield item
                if self.closed and cursor >= self.last_id:
                    return
                try:
                    async with asyncio.timeout(keepalive_s):
                        await waiting.wait()
                except TimeoutError:
                    yield None
        finally:
            self.readers -= 1


class TraceTail:
    """Reads one run's trace file as it grows and appends each complete line to the log.

    It is told that the file may have grown (:meth:`poke`: the run's observer events and
    recorded steps), so it does not poll; :meth:`drain` reads what is left once the run ended.
    A line is appended only once it is whole (the writer fsyncs each line), so a half-written
    record never reaches a client.
    """

    def __init__(self, log: EventLog, turn: int) -> None:
        self.log, self.turn = log, turn
        self.path: Path | None = None
        self._offset = 0
        self._partial = b""
        self._poked: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock: asyncio.Lock | None = None

    def start(self) -> None:
        """Start following (inside the loop)."""
        self._poked, self._lock = asyncio.Event(), asyncio.Lock()
        self._task = asyncio.create_task(self._follow(), name=f"trace-tail-{self.turn}")

    def poke(self) -> None:
        """The file may have grown."""
        if self._poked is not None:
            self._poked.set()

    async def _follow(self) -> None:
        assert self._poked is not None
        while True:
            await self._poked.wait()
            self._poked.clear()
            await self._read()

    def _read_sync(self, path: Path, offset: int) -> bytes:
        try:
            with path.open("rb") as fh:
                fh.seek(offset)
                return fh.read()
        except FileNotFoundError:  # not created yet (the header is written after RunStarted)
            return b""

    async def _read(self) -> None:
        assert self._lock is not None
        async with self._lock:  # one reader at a time: lines stay in order, none twice
            if self.path is None:
                return
            chunk = await asyncio.to_thread(self._read_sync, self.path, self._offset)
            base = self._offset - len(self._partial)  # where ``data`` starts in the file
            self._offset += len(chunk)
            data = self._partial + chunk
            *lines, self._partial = data.split(b"\n")
            start = base
            for line in lines:
                at, start = start, start + len(line) + 1
                if not line.strip():
                    continue
                text = line.decode("utf-8")
                try:
                    kind = json.loads(text).get("type", "record")
                except (json.JSONDecodeError, AttributeError):
                    logger.warning("%s: a line that is not a JSON record", self.path)
                    continue
                self.log.append(str(kind), text, source=(self.path, at, len(line)))

    async def catch_up(self) -> None:
        """Read what the file holds now (before a service event that must come after it)."""
        if self._lock is not None:
            await self._read()

    async def drain(self) -> None:
        """Stop following after reading everything the file holds now."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task})
            self._task = None
        if self._lock is not None:
            await self._read()

