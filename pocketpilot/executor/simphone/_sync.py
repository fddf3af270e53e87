"""The ``sync:`` service (file transfer): STAT, LIST, RECV, SEND and QUIT, version 1 only.

Only v1 is implemented and ``stat_v2``/``sendrecv_v2`` are not advertised, so clients stay on
the requests answered here.
"""

from __future__ import annotations

import logging
import struct

from ._stream import DeviceStream, StreamClosed
from .backend import MemFS

__all__ = ["serve_sync"]

logger = logging.getLogger(__name__)

_CHUNK = 64 * 1024


async def serve_sync(stream: DeviceStream, fs: MemFS) -> None:
    """Answer sync requests until the host sends QUIT or closes the stream."""
    try:
        while True:
            header = await stream.read_exactly(8)
            cmd, length = header[:4], struct.unpack("<I", header[4:])[0]
            if cmd == b"QUIT":
                return
            path = (await stream.read_exactly(length)).decode("utf-8", "replace")
            logger.debug("sync %s %s", cmd, path)
            if cmd == b"STAT":
                mode, size, mtime = fs.stat(path) or (0, 0, 0)
                await stream.write(b"STAT" + struct.pack("<III", mode, size, mtime))
            elif cmd == b"LIST":
                await _list(stream, fs, path)
            elif cmd == b"RECV":
                await _recv(stream, fs, path)
            elif cmd == b"SEND":
                await _send(stream, fs, path)
            else:
                await _fail(stream, f"unknown sync command {cmd!r}")
                return
    except StreamClosed:
        return


async def _fail(stream: DeviceStream, message: str) -> None:
    data = message.encode()
    await stream.write(b"FAIL" + struct.pack("<I", len(data)) + data)


async def _list(stream: DeviceStream, fs: MemFS, path: str) -> None:
    try:
        entries = fs.listdir(path)
    except NotADirectoryError:
        entries = []
    out = bytearray()
    for name, mode, size, mtime in entries:
        raw = name.encode()
        out += b"DENT" + struct.pack("<IIII", mode, size, mtime, len(raw)) + raw
    out += b"DONE" + struct.pack("<IIII", 0, 0, 0, 0)
    await stream.write(bytes(out))


async def _recv(stream: DeviceStream, fs: MemFS, path: str) -> None:
    try:
        data = fs.read(path)
    except (FileNotFoundError, IsADirectoryError):
        await _fail(stream, "No such file or directory")
        return
    out = bytearray()
    for i in range(0, len(data), _CHUNK):
        chunk = data[i : i + _CHUNK]
        out += b"DATA" + struct.pack("<I", len(chunk)) + chunk
    out += b"DONE" + struct.pack("<I", 0)
    await stream.write(bytes(out))


async def _send(stream: DeviceStream, fs: MemFS, spec: str) -> None:
    path, _, mode_text = spec.rpartition(",")
    if not path:
        path, mode_text = spec, "33188"
    mode = int(mode_text) if mode_text.isdigit() else 0o100644
    data = bytearray()
    while True:
        head = await stream.read_exactly(8)
        kind, value = head[:4], struct.unpack("<I", head[4:])[0]
        if kind == b"DATA":
            data += await stream.read_exactly(value)
        elif kind == b"DONE":
            fs.write(path, bytes(data), mode=mode, mtime=value)
            await stream.write(b"OKAY" + struct.pack("<I", 0))
            return
        else:
            await _fail(stream, f"unexpected {kind!r} during SEND")
            return
