"""`pocketpilot devices`, `simphone start|stop|status` and the `run --device` executor, real adb."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from pocketpilot.cli.devices import build_device_executor, devices, simphone
from pocketpilot.contracts import ToolCall
from pocketpilot.errors import DeviceOfflineError, UnknownDeviceError
from pocketpilot.executor.adb import AdbExecutor

if TYPE_CHECKING:
    from conftest import AdbServer, SimPhoneFactory


@pytest.mark.slow
async def test_simphone_lifecycle_and_devices(adb_server: AdbServer, tmp_path: Path) -> None:
    runner = CliRunner()
    state = ["--state-dir", str(tmp_path / "sp")]
    port = ["--adb-port", str(adb_server.port)]
    assert runner.invoke(devices, port).output.startswith("no devices")
    started = runner.invoke(simphone, ["start", "--backend", "sandbox", *port, *state])
    assert started.exit_code == 0, started.output
    serial = started.output.split()[2]
    assert f"pocketpilot run --device {serial}" in started.output
    try:
        listed = runner.invoke(devices, port)
        assert f"{serial}\tdevice" in listed.output
        running = runner.invoke(simphone, ["status", *state])
        assert running.exit_code == 0 and serial in running.output
        again = runner.invoke(simphone, ["start", *port, *state])
        assert again.exit_code != 0 and "already running" in str(again.exception)

        executor, verifier = build_device_executor(serial, adb_port=adb_server.port)
        assert isinstance(executor, AdbExecutor) and verifier is None
        result = await executor.call(ToolCall(name="set_brightness", arguments={"level": 40}))
        assert result.ok and (await executor.call(ToolCall(name="get_settings"))).data["brightness"] == 40
        await executor.aclose()
    finally:
        stopped = runner.invoke(simphone, ["stop", *state])
    assert stopped.output.strip() == "stopped"
    assert runner.invoke(simphone, ["status", *state]).exit_code == 1
    assert runner.invoke(simphone, ["stop", *state]).output.strip() == "no simulated phone running"


def test_build_device_executor_errors(adb_server: AdbServer) -> None:
    with pytest.raises(UnknownDeviceError, match="pocketpilot devices"):
        build_device_executor("NOPE123", adb_port=adb_server.port)
    with pytest.raises(DeviceOfflineError):  # nothing listens there
        build_device_executor("127.0.0.1:1", adb_port=adb_server.port)


def test_devices_shows_unauthorized_hint(simphone_factory: SimPhoneFactory) -> None:
    from pocketpilot.executor.simphone import Faults

    dev = simphone_factory(faults=Faults(refuse_auth=True), connect=False)
    assert "failed to authenticate" in dev.server.run("connect", dev.serial).stdout
    out = CliRunner().invoke(devices, ["--adb-port", str(dev.server.port)]).output
    assert f"{dev.serial}\tunauthorized" in out and "Allow USB debugging" in out
