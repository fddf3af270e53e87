"""Real adb server + simulated phones for executor tests.

Each test gets its own adb server (the binary shipped in the adbutils wheel) on a free port
with its own HOME, so no test sees another's devices or keys, and everything is killed after.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import adbutils
import pytest

from pocketpilot.executor.adb.server import PinnedAdbClient
from pocketpilot.executor.simphone import Faults, MiniPhone, PhoneBackend, ThreadedSimPhone

ADB_BINARY = Path(adbutils.__file__).parent / "binaries" / "adb"


def free_port() -> int:
    """A free loopback port outside 5555-5585 (adb probes those as emulators) and not 5037."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not 5555 <= port <= 5585 and port != 5037:
            return port


@pytest.fixture
def port_factory() -> Callable[[], int]:
    """``free_port`` for tests (a test module cannot import this conftest by name reliably)."""
    return free_port



@dataclass
class AdbServer:
    """An isolated adb server."""

    port: int
    home: Path
    proc: subprocess.Popen[bytes]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def client(self) -> adbutils.AdbClient:
        """A client bound to this server (never the import-time global, never spawning another)."""
        return PinnedAdbClient(host="127.0.0.1", port=self.port)

    def run(self, *args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
        """The adb CLI against this server."""
        return subprocess.run(
            [str(ADB_BINARY), "-P", str(self.port), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def connect(self, serial: str) -> None:
        """``adb connect`` and wait until the device is usable."""
        out = self.run("connect", serial)
        assert "connected" in out.stdout, out
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            states = {d.serial: d.state for d in self.client.list()}
            if states.get(serial) in {"device", "unauthorized"}:
                return
            time.sleep(0.05)
        raise AssertionError(f"{serial} did not come up: {states}")


def start_adb_server(tmp: Path) -> AdbServer:
    """Start ``adb server nodaemon`` on a free port with HOME under ``tmp``.

    ``ADB_LIBUSB=0`` skips the libusb backend, whose initial device scan otherwise holds every
    client for ~3 s; network devices (all we use) are unaffected.
    """
    port = free_port()
    home = tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        HOME=str(home),
        ANDROID_ADB_SERVER_PORT=str(port),
        ADB_MDNS="0",
        ADB_LIBUSB="0",
        ADB_MDNS_AUTO_CONNECT="0",
        ANDROID_USER_HOME=str(home / ".android"),
    )
    proc = subprocess.Popen(
        [str(ADB_BINARY), "-P", str(port), "server", "nodaemon"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            # pinned: a plain client polling a server still starting runs `adb start-server`,
            # which leaves a daemon on 5037 behind (what the leftover check caught)
            PinnedAdbClient(host="127.0.0.1", port=port).server_version()
            return AdbServer(port=port, home=home, proc=proc, env=env)
        except (adbutils.AdbError, OSError):
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"adb server exited with {proc.returncode}") from None
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RuntimeError("adb server did not start")


def stop_adb_server(server: AdbServer) -> None:
    """Kill the server process and reap it."""
    server.proc.kill()
    server.proc.wait(timeout=10)


@pytest.fixture
def adb_server(tmp_path: Path) -> Iterator[AdbServer]:
    """An isolated adb server, killed after the test."""
    server = start_adb_server(tmp_path)
    try:
        yield server
    finally:
        stop_adb_server(server)


@dataclass
class SimDevice:
    """A simulated phone connected to the test's adb server."""

    sim: ThreadedSimPhone
    server: AdbServer

    @property
    def serial(self) -> str:
        return self.sim.serial

    @property
    def backend(self) -> PhoneBackend:
        return self.sim.backend

    @property
    def faults(self) -> Faults:
        return self.sim.faults

    @property
    def device(self) -> adbutils.AdbDevice:
        return self.server.client.device(self.serial)


SimPhoneFactory = Callable[..., SimDevice]


@pytest.fixture
def simphone_factory(adb_server: AdbServer) -> Iterator[SimPhoneFactory]:
    """Make simulated phones on the test's adb server: ``make(backend=None, faults=None, connect=True)``."""
    started: list[ThreadedSimPhone] = []

    def make(
        backend: PhoneBackend | None = None, faults: Faults | None = None, connect: bool = True
    ) -> SimDevice:
        sim = ThreadedSimPhone(
            backend if backend is not None else MiniPhone(), port=free_port(), faults=faults
        )
        sim.start()
        started.append(sim)
        if connect:
            adb_server.connect(sim.serial)
        return SimDevice(sim=sim, server=adb_server)

    try:
        yield make
    finally:
        for sim in started:
            sim.stop()


@pytest.fixture
def simphone(simphone_factory: SimPhoneFactory) -> SimDevice:
    """One simulated phone (mini backend) connected to an isolated adb server."""
    return simphone_factory()
