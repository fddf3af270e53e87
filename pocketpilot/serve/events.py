"""A session's event stream: the records of its runs' trace files, plus the service's own events.

The trace file stays the one record of a run. :class:`TraceTail` reads each run's file as it
grows and appends every complete line, as it is, to the session's :class:`EventLog` (event
``header``, ``step`` or ``end``): what a client sees of a step is the line the trace holds,
byte for byte, never a second rendering that could drift from it. The service adds what no
trace holds: that a request was accepted, a pending question and its answer, the session's
state and errors.

Every event has a number, one more than the one before, in one session. A client that
reconnects with ``Last-Event-ID: n`` gets every event after ``n``, each exactly once, from the
log (which keeps the session's events while the session lives).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["EventLog", "ServeEvent", "TraceTail", "sse_frame"]

logger = logging.getLogger(__name__)

KEEPALIVE_S = 15.0
"""A comment line this often keeps proxies from closing an idle stream and finds dead clients."""


@dataclass(frozen=True)
class ServeEvent:
    """One event: its number, its name and its data (one JSON text)."""

    id: int
    event: str
    data: str


def sse_frame(event: ServeEvent) -> bytes:
    """The event in the Server-Sent Events wire format (data is one line of JSON)."""
    return f"id: {event.id}\nevent: {event.event}\ndata: {event.data}\n\n".encode()


class EventLog:
    """The append-only events of one session; readers wait for the next one."""

    def __init__(self) -> None:
        self._events: list[ServeEvent] = []
        self._changed: asyncio.Event | None = None
        self.closed = False

    def _signal(self) -> asyncio.Event:
        # created on first use, inside the loop (no loop-bound primitive in __init__)
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def __len__(self) -> int:
        return len(self._events)

    @property
    def last_id(self) -> int:
        """The newest event's number (0: none yet)."""
        return self._events[-1].id if self._events else 0

    def append(self, event: str, data: dict[str, Any] | str) -> ServeEvent:
        """Add an event (``data`` a dict, or a JSON text kept as it is) and wake the readers."""
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        item = ServeEvent(len(self._events) + 1, event, text)
        self._events.append(item)
        changed, self._changed = self._signal(), asyncio.Event()
        changed.set()
        return item

    def close(self) -> None:
        """No more events: readers finish once they have read everything."""
        self.closed = True
        self._signal().set()

    async def follow(self, after: int, *, keepalive_s: float = KEEPALIVE_S) -> AsyncIterator[ServeEvent | None]:
        """Every event after ``after``, then each new one as it comes; None for a keep-alive.

        Ends when the log is closed and read to the end.
        """
        cursor = max(after, 0)
        while True:
            waiting = self._signal()
            fresh = self._events[cursor:]
            for item in fresh:
                yield item
            cursor += len(fresh)
            if self.closed and cursor >= len(self._events):
                return
            try:
                async with asyncio.timeout(keepalive_s):
                    await waiting.wait()
            except TimeoutError:
                yield None


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
            self._offset += len(chunk)
            data = self._partial + chunk
            *lines, self._partial = data.split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                text = line.decode("utf-8")
                try:
                    kind = json.loads(text).get("type", "record")
                except (json.JSONDecodeError, AttributeError):
                    logger.warning("%s: a line that is not a JSON record", self.path)
                    continue
                self.log.append(str(kind), text)

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

