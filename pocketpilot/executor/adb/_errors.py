"""Translate adbutils/uiautomator2/socket exceptions into pocketpilot's device errors, at the edge."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import adbutils

from ...errors import (
    DeviceError,
    DeviceOfflineError,
    DeviceTimeout,
    DeviceUnauthorizedError,
    UnknownDeviceError,
)

__all__ = ["DeviceOutputError", "adb_errors", "map_adb_error"]


class DeviceOutputError(DeviceError):
    """The device answered, but not in the format the command prints (malformed output)."""

    def __init__(self, serial: str, command: str, output: str) -> None:
        super().__init__(serial, f"unexpected output from {command!r}: {output[:200]!r}")
        self.command, self.output = command, output


def map_adb_error(serial: str, exc: BaseException, *, known: bool) -> DeviceError:
    """The typed error for one backend exception.

    Args:
        serial: the device.
        exc: what adbutils, uiautomator2 or the socket raised.
        known: whether this executor has seen the device online; a serial that vanishes after
            that is a dropped device (offline), one never seen is unknown.
    """
    text = str(exc)
    lowered = text.lower()
    if (
        isinstance(exc, (adbutils.AdbTimeout, TimeoutError, socket.timeout))
        or "timeout" in type(exc).__name__.lower()
    ):
        return DeviceTimeout(serial, f"no answer in time ({text or type(exc).__name__})")
    if "unauthorized" in lowered:
        return DeviceUnauthorizedError(
            serial,
            "device unauthorized: accept the 'Allow USB debugging' prompt on the phone (and check "
            "this host's adb key)",
        )
    if "not found" in lowered and "device" in lowered and not known:
        return UnknownDeviceError(serial, f"no such device on the adb server ({text})")
    if "offline" in lowered or "not found" in lowered or "closed" in lowered:
        return DeviceOfflineError(serial, f"device went away ({text})")
    if isinstance(exc, (ConnectionError, EOFError, OSError)):
        return DeviceOfflineError(serial, f"connection lost ({type(exc).__name__}: {text})")
    try:
        from uiautomator2 import exceptions as u2e
    except ImportError:  # pragma: no cover - uiautomator2 is a dependency
        u2e = None
    if u2e is not None and isinstance(
        exc, (u2e.HTTPError, u2e.ConnectError, u2e.UiAutomationNotConnectedError, u2e.LaunchUiAutomationError)
    ):
        return DeviceOfflineError(serial, f"uiautomator2 server unreachable ({type(exc).__name__}: {text})")
    return DeviceOfflineError(serial, f"adb failed ({type(exc).__name__}: {text})")


@contextlib.contextmanager
def adb_errors(serial: str, *, known: bool = True) -> Iterator[None]:
    """Re-raise backend failures as DeviceError subclasses, chained ``from`` the original."""
    try:
        yield
    except DeviceError:
        raise
    except adbutils.AdbError as exc:
        raise map_adb_error(serial, exc, known=known) from exc
    except (OSError, EOFError) as exc:
        raise map_adb_error(serial, exc, known=known) from exc
    except Exception as exc:
        module = type(exc).__module__ or ""
        if module.startswith(("uiautomator2", "adbutils", "requests", "http.client")):
            raise map_adb_error(serial, exc, known=known) from exc
        raise
