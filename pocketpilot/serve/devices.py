"""The phones a session can drive: the sandbox, the simulated phone, an adb serial, or the
tools of an MCP server the service was started with.

A client names a device; it never names a program to start. MCP servers are commands the
user gave ``pocketpilot serve`` (``--mcp NAME=CMD``), picked by name: a token that may drive
a phone does not thereby run programs on the laptop.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import UsageError
from ..executor.base import Executor

__all__ = ["AdbDevice", "DeviceOpener", "DeviceSpec", "McpDevice", "OpenedDevice", "SandboxDevice", "SimPhoneDevice"]


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SandboxDevice(_Spec):
    """A sandbox phone of its own (deterministic apps, state kept for the session's life)."""

    kind: Literal["sandbox"] = "sandbox"
    apps: list[Annotated[str, Field(max_length=64)]] | None = Field(default=None, max_length=64)
    """Apps or tools to expose (None: the everyday apps)."""


class AdbDevice(_Spec):
    """A phone over adb: a real one, or the simulated phone (``pocketpilot simphone start``)."""

    kind: Literal["adb"] = "adb"
    serial: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._:\-\[\]]+$")


class SimPhoneDevice(_Spec):
    """The simulated phone started by ``pocketpilot simphone start`` (real adb protocol, sandbox state)."""

    kind: Literal["simphone"] = "simphone"


class McpDevice(_Spec):
    """The tools of an MCP server named when the service started (``--mcp NAME=CMD``)."""

    kind: Literal["mcp"] = "mcp"
    server: str = Field(min_length=1, max_length=64)


DeviceSpec = Annotated[SandboxDevice | AdbDevice | SimPhoneDevice | McpDevice, Field(discriminator="kind")]


@dataclass
class OpenedDevice:
    """A device a session holds: its executor, the key runs queue on, and how to let it go."""

    executor: Executor
    key: str
    """Runs on the same key go one at a time (one phone, one run); different keys run at once."""
    close: Callable[[], Awaitable[None]] | None = None
    state: Any = field(default=None)
    """The sandbox phone, for tests and the console (None for other devices)."""

    async def aclose(self) -> None:
        """Release the device (an MCP server process stops, adb's uiautomator2 server stops)."""
        if self.close is not None:
            await self.close()


DeviceFactory = Callable[[Any], Awaitable[OpenedDevice]]
"""Opens a device from its spec (injected in tests: a phone that drops, say)."""


class DeviceOpener:
    """Opens the devices of :data:`DeviceSpec`."""

    def __init__(self, mcp_servers: Mapping[str, Sequence[str]] | None = None, adb_port: int | None = None,
                 simphone_dir: Path | None = None) -> None:
        self.mcp_servers = {k: list(v) for k, v in (mcp_servers or {}).items()}
        self.adb_port = adb_port
        self.simphone_dir = simphone_dir
        """Where ``pocketpilot simphone start`` keeps its state (default: the pocketpilot cache)."""

    def _adb(self, serial: str) -> Any:
        """An AdbExecutor for ``serial``, checked now (``host:port`` serials are ``adb connect``-ed)."""
        from ..executor.adb import AdbExecutor, connect_device
        from ..executor.adb.server import PinnedAdbClient

        port = self.adb_port if self.adb_port is not None else int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
        client = PinnedAdbClient(host="127.0.0.1", port=port)
        connect_device(client, serial)
        return AdbExecutor(serial, client=client)

    async def __call__(self, spec: Any) -> OpenedDevice:
        """The device, checked now (a bad serial or app fails the session's creation).

        Raises:
            UsageError: an unknown app, MCP server name, or serial.
        """
        if isinstance(spec, SandboxDevice):
            from ..executor.sandbox import EVERYDAY_APPS, SandboxExecutor, SandboxPhone

            phone = SandboxPhone()
            executor = SandboxExecutor(phone, list(spec.apps) if spec.apps else list(EVERYDAY_APPS))
            return OpenedDevice(executor, f"sandbox:{uuid.uuid4().hex}", state=phone)
        if isinstance(spec, AdbDevice):
            adb = await asyncio.to_thread(self._adb, spec.serial)
            return OpenedDevice(adb, f"adb:{spec.serial}", close=adb.aclose)
        if isinstance(spec, SimPhoneDevice):
            from ..executor.simphone import simphone_status
            from ..models.store import pocketpilot_home

            info = simphone_status(self.simphone_dir or pocketpilot_home() / "simphone")
            if info is None:
                raise UsageError("no simulated phone is running: start one with `pocketpilot simphone start`")
            adb = await asyncio.to_thread(self._adb, info.serial)
            return OpenedDevice(adb, f"adb:{info.serial}", close=adb.aclose)
        if isinstance(spec, McpDevice):
            argv = self.mcp_servers.get(spec.server)
            if argv is None:
                known = ", ".join(sorted(self.mcp_servers)) or "none (start serve with --mcp NAME=CMD)"
                raise UsageError(f"no MCP server named {spec.server!r}; known: {known}")
            from ..executor.mcp import McpExecutor, stdio_server

            mcp = await McpExecutor(stdio_server(argv[0], argv[1:])).start()
            return OpenedDevice(mcp, f"mcp:{spec.server}:{uuid.uuid4().hex}", close=mcp.aclose)
        raise UsageError(f"unknown device {spec!r}")  # pragma: no cover (the schema admits no other)


def parse_mcp_option(value: str) -> tuple[str, list[str]]:
    """``NAME=CMD ARGS`` -> (name, argv).

    Raises:
        UsageError: no name, no command, or a command that does not parse.
    """
    name, sep, command = value.partition("=")
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--mcp {value!r}: {exc}") from exc
    if not sep or not name.strip() or not argv:
        raise UsageError(f"--mcp {value!r}: expected NAME=CMD ARGS, e.g. --mcp 'files=python files_server.py'")
    return name.strip(), argv
