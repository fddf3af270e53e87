"""The adb server pocketpilot talks to: never spawned behind the user's back, stopped by whoever started it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from adbutils.errors import AdbConnectionError
from click.testing import CliRunner

from pocketpilot.cli.devices import devices, simphone
from pocketpilot.contracts import ToolCall
from pocketpilot.errors import DeviceOfflineError
from pocketpilot.executor.adb import AdbExecutor, AdbExecutorConfig
from pocketpilot.executor.adb.server import PinnedAdbClient, ensure_server, server_answers, stop_started_server

if TYPE_CHECKING:
    from conftest import AdbServer, SimPhoneFactory


def stop_adb_server(server: AdbServer) -> None:
    server.proc.kill()
    server.proc.wait(timeout=10)


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """adb keeps its keys under HOME: a server this test starts must not touch the user's."""
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ADB_MDNS", "0")
    monkeypatch.setenv("ADB_LIBUSB", "0")
    return home


def test_a_client_of_a_dead_server_raises_instead_of_spawning_one(isolated_home: Path, port_factory) -> None:
    port = port_factory()
    default = int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
    was_up = server_answers("127.0.0.1", default)
    with pytest.raises(AdbConnectionError):
        PinnedAdbClient(host="127.0.0.1", port=port).server_version()
    assert not server_answers("127.0.0.1", port)
    assert server_answers("127.0.0.1", default) == was_up  # nothing started on the default port either


async def test_an_executor_whose_server_drops_never_starts_one_elsewhere(
    simphone_factory: SimPhoneFactory, isolated_home: Path
) -> None:
    """The old leak: a plain client given to the executor ran `adb start-server` (port 5037) on reconnect."""
    dev = simphone_factory()
    default = int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
    was_up = server_answers("127.0.0.1", default)
    config = AdbExecutorConfig(reconnect_attempts=2, reconnect_base_delay_s=0.05)
    executor = AdbExecutor(dev.serial, client=dev.server.client, config=config)
    await executor.connect()
    stop_adb_server(dev.server)
    with pytest.raises(DeviceOfflineError):
        await executor.reconnect()
    with pytest.raises(DeviceOfflineError):  # a call reconnects first: same answer, no spawn
        await executor.call(ToolCall(name="get_settings"))
    assert not server_answers("127.0.0.1", dev.server.port)
    assert server_answers("127.0.0.1", default) == was_up


def test_ensure_server_starts_records_and_stop_stops_only_its_own(isolated_home: Path, tmp_path: Path, port_factory,
                                                                  adb_server: AdbServer) -> None:
    state = tmp_path / "state"
    port = port_factory()
    try:
        assert ensure_server(port, state) is True
        assert server_answers("127.0.0.1", port)
        assert ensure_server(port, state) is False  # running: nothing more started
        assert ensure_server(adb_server.port, state) is False  # the user's server is not recorded
        assert stop_started_server(state) == [port]
        assert not server_answers("127.0.0.1", port)
        assert server_answers("127.0.0.1", adb_server.port)  # never stopped: not ours
        assert stop_started_server(state) == []
    finally:
        if server_answers("127.0.0.1", port):
            stop_started_server(state)


def test_devices_says_it_started_a_server_and_simphone_stop_stops_it(isolated_home: Path, tmp_path: Path,
                                                                    port_factory) -> None:
    runner = CliRunner()
    port = port_factory()
    state = ["--state-dir", str(tmp_path / "sp")]
    try:
        listed = runner.invoke(devices, ["--adb-port", str(port), *state])
        assert listed.exit_code == 0, listed.output
        assert f"started an adb server on port {port}" in listed.output
        assert server_answers("127.0.0.1", port)
        again = runner.invoke(devices, ["--adb-port", str(port), *state])
        assert "started an adb server" not in again.output
        stopped = runner.invoke(simphone, ["stop", *state])
        assert f"stopped the adb server on port {port}" in stopped.output
        assert not server_answers("127.0.0.1", port)
    finally:
        stop_started_server(tmp_path / "sp")
