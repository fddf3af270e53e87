"""Device discovery on an adb server: list, connect by serial or ``host:port``, check state."""

from __future__ import annotations

import asyncio
import logging
import re

import adbutils
from pydantic import BaseModel, ConfigDict, Field

from ...errors import DeviceOfflineError, DeviceUnauthorizedError, UnknownDeviceError
from ._errors import adb_errors

__all__ = ["DeviceInfo", "alist_devices", "connect_device", "is_network_serial", "list_devices"]

logger = logging.getLogger(__name__)

_NETWORK = re.compile(r"^[\w.-]+:\d{1,5}$")


def is_network_serial(serial: str) -> bool:
    """``host:port`` serials are reached with ``adb connect`` (and can be reconnected)."""
    return bool(_NETWORK.match(serial))


class DeviceInfo(BaseModel):
    """One device as the adb server lists it."""

    model_config = ConfigDict(frozen=True)

    serial: str
    state: str
    """``device`` (usable), ``unauthorized``, ``offline``, ``authorizing``, ``connecting``, ..."""
    tags: dict[str, str] = Field(default_factory=dict)


def list_devices(client: adbutils.AdbClient) -> list[DeviceInfo]:
    """Every device the server knows, in any state (blocking)."""
    with adb_errors("adb-server"):
        return [
            DeviceInfo(serial=d.serial, state=d.state, tags=dict(d.tags)) for d in client.list(extended=True)
        ]


async def alist_devices(client: adbutils.AdbClient) -> list[DeviceInfo]:
    """:func:`list_devices` off the event loop."""
    return await asyncio.to_thread(list_devices, client)


def connect_device(client: adbutils.AdbClient, serial: str, *, timeout_s: float = 5.0) -> adbutils.AdbDevice:
    """A usable AdbDevice for ``serial``, running ``adb connect`` first for ``host:port`` serials.

    Raises:
        UnknownDeviceError: the server does not know the serial (and it is not connectable).
        DeviceUnauthorizedError: the phone has not accepted this host's key.
        DeviceOfflineError: the device is listed but offline, or ``adb connect`` failed.
    """
    known = {d.serial: d for d in list_devices(client)}
    if serial not in known and is_network_serial(serial):
        with adb_errors(serial):
            reply = client.connect(serial, timeout=timeout_s)
        logger.debug("adb connect %s: %s", serial, reply)
        if "unable" in reply.lower() or "failed to connect" in reply.lower() or "cannot" in reply.lower():
            raise DeviceOfflineError(serial, f"adb connect failed: {reply.strip()}")
        known = {d.serial: d for d in _wait_listed(client, serial, timeout_s)}
    info = known.get(serial)
    if info is None:
        raise UnknownDeviceError(serial, "no such device on the adb server; see `pocketpilot devices`")
    if info.state == "unauthorized":
        raise DeviceUnauthorizedError(
            serial,
            "device unauthorized: accept the 'Allow USB debugging' prompt on the phone, or check "
            "that this host's adb key (~/.android/adbkey) is the one the phone trusts",
        )
    if info.state != "device":
        raise DeviceOfflineError(serial, f"device is {info.state}")
    return client.device(serial)


def _wait_listed(client: adbutils.AdbClient, serial: str, timeout_s: float) -> list[DeviceInfo]:
    """After ``adb connect`` the state settles (connecting/authorizing -> device|unauthorized)."""
    import time

    deadline = time.monotonic() + timeout_s
    devices = list_devices(client)
    while time.monotonic() < deadline:
        state = next((d.state for d in devices if d.serial == serial), None)
        if state in {"device", "unauthorized"}:
            break
        time.sleep(0.05)
        devices = list_devices(client)
    return devices
