"""The simulated phone's adb device side: a TCP server the real adb server ``connect``s to.

One :class:`SimPhone` is one device on one loopback port. It answers the transport handshake
(CNXN, optionally AUTH), multiplexes streams (OPEN/OKAY/WRTE/CLSE) and routes services:
``shell:`` (v1), ``shell,v2:``, ``sync:`` and ``tcp:9008`` (the uiautomator2 server, which
exists only while its ``app_process`` shell runs, as on a real phone). Unknown services are
refused with CLSE, which is how clients learn that something is not running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import struct
from dataclasses import dataclass

from . import _proto as p
from ._rpc import RpcHandler, serve_http
from ._shell import STDERR, STDOUT, run_shell
from ._stream import DeviceStream, StreamClosed
from ._sync import serve_sync
from .backend import PhoneBackend

__all__ = ["Faults", "SimPhone"]

logger = logging.getLogger(__name__)

FEATURES = ("shell_v2",)
"""Advertise only what is implemented: shell_v2 and stat_v2 change what clients send."""

U2_PORT = 9008


@dataclass
class Faults:
    """Injected misbehaviour, changeable while the phone runs."""

    refuse_auth: bool = False
    """Ask for authorization and never grant it: the host lists the device as unauthorized."""
    delay_s: float = 0.0
    """Answer every stream this much later (a slow or stalled phone)."""
    refuse_connections: bool = False
    """Close new transport connections at once (the phone is gone)."""


class _Connection:
    """One transport connection from the adb server."""

    def __init__(self, phone: SimPhone, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.phone, self.reader, self.writer = phone, reader, writer
        self.streams: dict[int, DeviceStream] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.max_payload = p.MAX_PAYLOAD
        self.verify_checksum = False
        self._next_id = 1

    def send(self, command: int, arg0: int, arg1: int, payload: bytes = b"") -> None:
        if not self.writer.is_closing():
            self.writer.write(p.pack(command, arg0, arg1, payload))

    async def run(self) -> None:
        try:
            await self._handshake()
            while True:
                msg = await p.read_message(self.reader, verify_checksum=self.verify_checksum)
                self._handle(msg)
        except (asyncio.IncompleteReadError, ConnectionError, p.ProtocolError) as exc:
            logger.debug("%s: connection ended: %r", self.phone.serial, exc)
        finally:
            self.close()

    async def _handshake(self) -> None:
        msg = await p.read_message(self.reader, verify_checksum=False)
        while msg.command != p.A_CNXN:
            msg = await p.read_message(self.reader, verify_checksum=False)
        version = msg.arg0
        self.verify_checksum = version < p.A_VERSION_SKIP_CHECKSUM
        self.max_payload = min(p.MAX_PAYLOAD, msg.arg1 or p.MAX_PAYLOAD)
        if self.phone.faults.refuse_auth:
            # Ask for a signature, never accept one, and ignore the public key the host then
            # offers: exactly what a phone whose user has not tapped "Allow" does.
            self.send(p.A_AUTH, p.AUTH_TOKEN, 0, os.urandom(20))
            while True:
                msg = await p.read_message(self.reader, verify_checksum=False)
                if msg.command == p.A_AUTH and msg.arg0 == p.AUTH_SIGNATURE:
                    self.send(p.A_AUTH, p.AUTH_TOKEN, 0, os.urandom(20))
        self.send(p.A_CNXN, p.A_VERSION, p.MAX_PAYLOAD, self.phone.banner())

    def _handle(self, msg: p.Message) -> None:
        if msg.command == p.A_OPEN:
            service = msg.payload.rstrip(b"\0").decode("utf-8", "replace")
            task = asyncio.get_running_loop().create_task(self._open(msg.arg0, service))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif msg.command == p.A_WRTE:
            stream = self.streams.get(msg.arg1)
            if stream is not None and not stream.closed:
                stream.feed(msg.payload)
                self.send(p.A_OKAY, stream.local_id, stream.remote_id)
        elif msg.command == p.A_OKAY:
            stream = self.streams.get(msg.arg1)
            if stream is not None:
                if stream.remote_id == 0:
                    stream.remote_id = msg.arg0
                stream.on_okay()
        elif msg.command == p.A_CLSE:
            stream = self.streams.pop(msg.arg1, None)
            if stream is not None:
                stream.on_close()
        elif msg.command == p.A_CNXN:
            logger.debug("%s: host re-sent CNXN", self.phone.serial)
            self.send(p.A_CNXN, p.A_VERSION, p.MAX_PAYLOAD, self.phone.banner())

    async def _open(self, remote_id: int, service: str) -> None:
        if self.phone.faults.delay_s:
            await asyncio.sleep(self.phone.faults.delay_s)
        handler = self.phone.route(service)
        if handler is None:
            logger.debug("%s: refusing service %r", self.phone.serial, service)
            self.send(p.A_CLSE, 0, remote_id)
            return
        local_id = self._next_id
        self._next_id += 1
        stream = DeviceStream(local_id, remote_id, self.send, self.max_payload)
        self.streams[local_id] = stream
        self.send(p.A_OKAY, local_id, remote_id)
        try:
            await handler(stream)
        except StreamClosed:
            pass
        finally:
            self.streams.pop(local_id, None)
            stream.close()

    def close(self) -> None:
        for stream in list(self.streams.values()):
            stream.on_close()
        self.streams.clear()
        for task in list(self.tasks):
            task.cancel()
        if not self.writer.is_closing():
            self.writer.close()


class SimPhone:
    """A simulated phone listening on ``host:port`` for the adb server.

    Create and use it on one event loop (see :class:`~.ThreadedSimPhone` to run it beside
    synchronous code). ``backend`` holds the phone's state; every handler runs on the loop thread.
    """

    def __init__(
        self, backend: PhoneBackend, *, host: str = "127.0.0.1", port: int = 0, faults: Faults | None = None
    ) -> None:
        self.backend = backend
        self.host, self._port = host, port
        self.faults = faults or Faults()
        self.rpc = RpcHandler(backend)
        self._server: asyncio.Server | None = None
        self._connections: set[_Connection] = set()
        self._conn_tasks: set[asyncio.Task[None]] = set()
        self._u2_streams: set[DeviceStream] = set()
        self.opened_services: list[str] = []

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        return self._port

    @property
    def serial(self) -> str:
        """The serial the adb server will list: ``host:port``."""
        return f"{self.host}:{self._port}"

    @property
    def u2_running(self) -> bool:
        """Whether the uiautomator2 server 'process' is alive."""
        return any(not s.closed for s in self._u2_streams)

    def banner(self) -> bytes:
        """CNXN payload: device identity and the advertised feature list."""
        props = self.backend.props()
        ident = ";".join(
            f"{k}={props.get(k, '')}" for k in ("ro.product.name", "ro.product.model", "ro.product.device")
        )
        return f"device::{ident};features={','.join(FEATURES)}".encode()

    async def start(self) -> None:
        """Bind and start accepting transport connections."""
        self._server = await asyncio.start_server(self._accept, self.host, self._port)
        self._port = self._server.sockets[0].getsockname()[1]
        logger.info("simphone listening on %s", self.serial)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.faults.refuse_connections:
            writer.close()
            return
        conn = _Connection(self, reader, writer)
        self._connections.add(conn)
        task = asyncio.current_task()
        if task is not None:
            self._conn_tasks.add(task)
        try:
            await conn.run()
        finally:
            self._connections.discard(conn)
            if task is not None:
                self._conn_tasks.discard(task)

    def drop_connections(self) -> int:
        """Cut every transport connection at once (a cable pull); returns how many were cut."""
        n = len(self._connections)
        for conn in list(self._connections):
            conn.writer.transport.abort()
            conn.close()
        return n

    async def stop(self) -> None:
        """Stop listening and close every connection."""
        if self._server is not None:
            self._server.close()
        self.drop_connections()
        if self._conn_tasks:
            await asyncio.wait(set(self._conn_tasks), timeout=2)
        if self._server is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 2)
        self._server = None

    # ------------------------------------------------------------------ services
    def route(self, service: str):  # noqa: ANN201 - returns a coroutine function or None
        """The handler for an OPEN'd service name, or None to refuse it."""
        self.opened_services.append(service)
        if service.startswith("shell,v2") or service.startswith("shell,"):
            opts, _, cmd = service.partition(":")
            if "v2" in opts.split(","):
                return lambda s: self._shell(s, cmd, v2=True)
            return lambda s: self._shell(s, cmd, v2=False)
        if service.startswith("shell:"):
            return lambda s: self._shell(s, service[len("shell:") :], v2=False)
        if service.startswith("exec:"):
            return lambda s: self._shell(s, service[len("exec:") :], v2=False)
        if service == "sync:":
            return lambda s: serve_sync(s, self.backend.fs)
        if (
            service in {f"tcp:{U2_PORT}", f"tcp:localhost:{U2_PORT}", f"tcp:127.0.0.1:{U2_PORT}"}
            and self.u2_running
        ):
            return lambda s: serve_http(s, self.rpc)
        return None

    async def _shell(self, stream: DeviceStream, cmd: str, *, v2: bool) -> None:
        if not cmd.strip():
            # interactive shell: not modelled; behave like one that exits at once
            if v2:
                await stream.write(bytes([3]) + struct.pack("<I", 1) + b"\0")
            return
        result = await run_shell(self.backend, cmd)
        if v2:
            payload = bytearray()
            for fd, chunk in result.chunks:
                payload += bytes([STDOUT if fd == STDOUT else STDERR]) + struct.pack("<I", len(chunk)) + chunk
            if payload:
                await stream.write(bytes(payload))
        else:
            data = b"".join(chunk for _, chunk in result.chunks)
            if data:
                await stream.write(data)
        if result.daemon == "uiautomator2":
            self._u2_streams.add(stream)
            try:
                await stream.write(
                    b"[server] INFO: [UiAutomator2Server] Starting Server\n"
                    if not v2
                    else bytes([1]) + struct.pack("<I", 13) + b"Server ready\n"
                )
                await stream.wait_closed()
            finally:
                self._u2_streams.discard(stream)
            return
        if v2:
            await stream.write(bytes([3]) + struct.pack("<I", 1) + bytes([result.code & 0xFF]))
