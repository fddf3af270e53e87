"""`pocketpilot devices` and `pocketpilot simphone start|stop|status`, plus the executor for `run --device`.

``build_device_executor`` is what ``pocketpilot run --device SERIAL`` uses: the same planner,
task and harness as on the sandbox, with the phone reached over adb (a real one, or the
simulated phone started by ``pocketpilot simphone start``).
"""

from __future__ import annotations

import os
from pathlib import Path

import adbutils
import click

from ..executor.adb import AdbExecutor, connect_device, list_devices
from ..executor.adb.server import PinnedAdbClient, ensure_server, stop_started_server
from ..executor.simphone import simphone_status, start_simphone, stop_simphone
from ..harness.base import Verifier
from ..models.store import pocketpilot_home

__all__ = ["build_device_executor", "devices", "simphone"]


def _adb_port(port: int | None) -> int:
    return port if port is not None else int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))


def _client(port: int | None) -> adbutils.AdbClient:
    return PinnedAdbClient(host="127.0.0.1", port=_adb_port(port))


def _serve(port: int | None, state_dir: Path) -> adbutils.AdbClient:
    """A client of a running adb server, starting one (and saying so) when none answers."""
    if ensure_server(_adb_port(port), state_dir):
        click.echo(f"started an adb server on port {_adb_port(port)} (`pocketpilot simphone stop` stops it)", err=True)
    return _client(port)


def build_device_executor(serial: str, adb_port: int | None = None) -> tuple[AdbExecutor, Verifier | None]:
    """An AdbExecutor for ``serial``, checked now so a bad serial fails before the model loads.

    ``host:port`` serials are ``adb connect``-ed. There is no verifier: a task's verifier reads
    the sandbox's state, which a device does not expose (the simulated phone's state lives in
    its own process); the episode is still traced and its tool calls recorded.

    Raises:
        UnknownDeviceError, DeviceUnauthorizedError, DeviceOfflineError: with what to do next.
    """
    client = _client(adb_port)
    connect_device(client, serial)
    return AdbExecutor(serial, client=client), None


_STATE_DIR = click.option(
    "--state-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the phone's pid/port file, its log and the adb server record go (default: the pocketpilot cache).",
)


def _state_dir(state_dir: str | None) -> Path:
    return Path(state_dir) if state_dir else pocketpilot_home() / "simphone"


@click.command("devices")
@click.option(
    "--adb-port", type=int, default=None, help="adb server port (default $ANDROID_ADB_SERVER_PORT or 5037)."
)
@_STATE_DIR
def devices(adb_port: int | None, state_dir: str | None) -> None:
    """List the devices the adb server knows, with their state (starting the server if needed)."""
    found = list_devices(_serve(adb_port, _state_dir(state_dir)))
    if not found:
        click.echo("no devices (start one with `pocketpilot simphone start`, or plug in a phone)")
        return
    for d in found:
        extra = " ".join(f"{k}:{v}" for k, v in sorted(d.tags.items()))
        hint = {
            "unauthorized": "  <- accept 'Allow USB debugging' on the phone",
            "offline": "  <- reconnect the cable or restart adb",
        }.get(d.state, "")
        click.echo(f"{d.serial}\t{d.state}\t{extra}{hint}".rstrip())


simphone = click.Group("simphone", help="A simulated phone that the real adb server accepts.")


@simphone.command("start")
@click.option("--port", type=int, default=0, help="TCP port (0: a free one; avoid 5555-5585).")
@click.option("--backend", type=click.Choice(["auto", "sandbox", "mini"]), default="auto")
@click.option("--connect/--no-connect", default=True, help="Also `adb connect` it on the adb server.")
@click.option("--adb-port", type=int, default=None)
@_STATE_DIR
def start(port: int, backend: str, connect: bool, adb_port: int | None, state_dir: str | None) -> None:
    """Start a simulated phone in the background."""
    info = start_simphone(_state_dir(state_dir), port=port, backend=backend)  # type: ignore[arg-type]
    click.echo(f"simulated phone {info.serial} ({info.backend}, pid {info.pid})")
    if connect:
        try:
            connect_device(_serve(adb_port, _state_dir(state_dir)), info.serial)
        except Exception:
            stop_simphone(_state_dir(state_dir))  # do not leave a phone nobody can reach
            raise
        click.echo(f"connected: use `pocketpilot run --device {info.serial}`")


@simphone.command("stop")
@_STATE_DIR
def stop(state_dir: str | None) -> None:
    """Stop the background simulated phone, and the adb server pocketpilot started for it."""
    click.echo("stopped" if stop_simphone(_state_dir(state_dir)) else "no simulated phone running")
    for port in stop_started_server(_state_dir(state_dir)):
        click.echo(f"stopped the adb server on port {port}")


@simphone.command("status")
@_STATE_DIR
def status(state_dir: str | None) -> None:
    """Show whether the background simulated phone runs (exit 1 when it does not)."""
    info = simphone_status(_state_dir(state_dir))
    if info is None:
        click.echo("no simulated phone running")
        raise SystemExit(1)
    click.echo(f"running: {info.serial} ({info.backend}, pid {info.pid})")
