"""The adb transport wire format: 24-byte little-endian headers followed by a payload.

Only what a device side needs: pack a message (checksum always filled, because hosts of
protocol version 0x01000000 verify it), and read one from a stream (checksum verified only
for that old version; 0x01000001 hosts and devices skip it).
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass

A_SYNC = 0x434E5953
A_CNXN = 0x4E584E43
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_CLSE = 0x45534C43
A_WRTE = 0x45545257
A_AUTH = 0x48545541
A_STLS = 0x534C5453

A_VERSION_MIN = 0x01000000
A_VERSION_SKIP_CHECKSUM = 0x01000001
A_VERSION = 0x01000001

AUTH_TOKEN = 1
AUTH_SIGNATURE = 2
AUTH_RSAPUBLICKEY = 3

MAX_PAYLOAD = 256 * 1024
_HEADER = struct.Struct("<6I")

NAMES = {
    A_SYNC: "SYNC",
    A_CNXN: "CNXN",
    A_OPEN: "OPEN",
    A_OKAY: "OKAY",
    A_CLSE: "CLSE",
    A_WRTE: "WRTE",
    A_AUTH: "AUTH",
    A_STLS: "STLS",
}


class ProtocolError(Exception):
    """The peer sent bytes that are not a valid adb message."""


@dataclass(frozen=True)
class Message:
    """One adb message."""

    command: int
    arg0: int
    arg1: int
    payload: bytes = b""

    @property
    def name(self) -> str:
        """Four-letter command name, for logs."""
        return NAMES.get(self.command, hex(self.command))


def checksum(data: bytes) -> int:
    """The adb 'crc': a plain byte sum, as every adb implementation computes it."""
    return sum(data) & 0xFFFFFFFF


def pack(command: int, arg0: int, arg1: int, payload: bytes = b"") -> bytes:
    """Encode one message with its checksum and magic filled."""
    header = _HEADER.pack(command, arg0, arg1, len(payload), checksum(payload), command ^ 0xFFFFFFFF)
    return header + payload


async def read_message(reader: asyncio.StreamReader, *, verify_checksum: bool) -> Message:
    """Read one message; raise ProtocolError on a bad magic or (when asked) a bad checksum."""
    header = await reader.readexactly(_HEADER.size)
    command, arg0, arg1, length, crc, magic = _HEADER.unpack(header)
    if magic != command ^ 0xFFFFFFFF:
        raise ProtocolError(f"bad magic for command {command:#x}")
    if length > 16 * 1024 * 1024:
        raise ProtocolError(f"payload of {length} bytes is too large")
    payload = await reader.readexactly(length) if length else b""
    if verify_checksum and checksum(payload) != crc:
        raise ProtocolError("payload checksum mismatch")
    return Message(command, arg0, arg1, payload)
