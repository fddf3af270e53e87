"""One adb stream as the device sees it: a byte pipe with adb's one-WRTE-in-flight flow control."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["StreamClosed", "DeviceStream"]


class StreamClosed(Exception):
    """The host closed the stream (or the connection dropped)."""


class DeviceStream:
    """Device end of one stream: ``read*`` what the host wrote, ``write`` back with flow control.

    adb allows one unacknowledged WRTE per stream: :meth:`write` sends a chunk and waits for the
    host's OKAY before the next, and chunks respect the negotiated max payload.
    """

    def __init__(
        self, local_id: int, remote_id: int, send: Callable[[int, int, int, bytes], None], max_payload: int
    ) -> None:
        self.local_id, self.remote_id = local_id, remote_id
        self._send = send
        self._max = max_payload
        self._buf = bytearray()
        self._data = asyncio.Event()
        self._okay = asyncio.Event()
        self.closed = False
        self._sent_close = False

    # host -> device ------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Called by the connection for each host WRTE."""
        self._buf.extend(data)
        self._data.set()

    def on_okay(self) -> None:
        """The host acknowledged our last WRTE."""
        self._okay.set()

    def on_close(self) -> None:
        """The host closed the stream or the connection went away."""
        self.closed = True
        self._sent_close = True  # no CLSE back: the host has already forgotten the stream
        self._data.set()
        self._okay.set()

    async def read_some(self) -> bytes:
        """Whatever has arrived (at least one byte); b"" once closed and drained."""
        while not self._buf:
            if self.closed:
                return b""
            self._data.clear()
            await self._data.wait()
        data = bytes(self._buf)
        self._buf.clear()
        return data

    async def read_exactly(self, n: int) -> bytes:
        """Exactly ``n`` bytes, or StreamClosed."""
        while len(self._buf) < n:
            if self.closed:
                raise StreamClosed
            self._data.clear()
            await self._data.wait()
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    async def read_until(self, marker: bytes, limit: int = 1 << 20) -> bytes:
        """Bytes up to and including ``marker``, or StreamClosed."""
        while (pos := self._buf.find(marker)) < 0:
            if self.closed or len(self._buf) > limit:
                raise StreamClosed
            self._data.clear()
            await self._data.wait()
        end = pos + len(marker)
        data = bytes(self._buf[:end])
        del self._buf[:end]
        return data

    async def wait_closed(self) -> None:
        """Block until the host closes the stream (long-running services)."""
        while not self.closed:
            self._data.clear()
            await self._data.wait()

    # device -> host ------------------------------------------------------------------
    async def write(self, data: bytes) -> None:
        """Send ``data`` as WRTE chunks, each acknowledged before the next."""
        from ._proto import A_WRTE

        view = memoryview(data)
        while view:
            if self.closed:
                raise StreamClosed
            chunk, view = view[: self._max], view[self._max :]
            self._okay.clear()
            self._send(A_WRTE, self.local_id, self.remote_id, bytes(chunk))
            await self._okay.wait()

    def close(self) -> None:
        """Send CLSE once (unless the host closed first)."""
        from ._proto import A_CLSE

        if not self._sent_close:
            self._sent_close = True
            self._send(A_CLSE, self.local_id, self.remote_id, b"")
        self.closed = True
        self._data.set()
        self._okay.set()
