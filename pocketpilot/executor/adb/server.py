"""The adb server pocketpilot talks to: the port it was asked for, and whoever starts one stops it.

adbutils, finding no server at its port, runs ``adb start-server``: that starts a server on
``$ANDROID_ADB_SERVER_PORT`` or 5037, whichever port the client was pointed at, and leaves it
running for good. A dropped server then comes back on the wrong port, and every run that
touched one leaves a daemon behind. Here a client never spawns anything; a server is started
only on purpose (:func:`ensure_server`, which the CLI says it did), on the asked-for port, and
recorded so that ``pocketpilot simphone stop`` can stop exactly the server pocketpilot started.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import adbutils
from adbutils.errors import AdbConnectionError

from ...errors import DeviceOfflineError

__all__ = ["PinnedAdbClient", "adb_binary", "ensure_server", "server_answers", "stop_started_server"]

logger = logging.getLogger(__name__)

_STATE_FILE = "adb-server.json"


def adb_binary() -> str:
    """The adb binary shipped in the adbutils wheel (or the one on PATH it falls back to)."""
    return str(adbutils.adb_path())


def server_answers(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether something accepts connections at the adb server's address."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


class PinnedAdbClient(adbutils.AdbClient):
    """An adbutils client that fails when its server is down, instead of spawning one elsewhere."""

    def make_connection(self, timeout: float | None = None) -> Any:
        """A connection to this server; raises AdbConnectionError when it does not answer."""
        if not server_answers(self.host, self.port):
            raise AdbConnectionError(f"no adb server answers at {self.host}:{self.port}")
        return super().make_connection(timeout)


def ensure_server(port: int, state_dir: Path, *, timeout_s: float = 20.0) -> bool:
    """Start an adb server on ``port`` when none answers there; True when this call started it.

    A started server is recorded in ``state_dir`` so :func:`stop_started_server` stops it and
    nothing else (a server the user started themselves is never ours to kill).
    """
    if server_answers("127.0.0.1", port):
        return False
    env = dict(os.environ, ANDROID_ADB_SERVER_PORT=str(port))
    subprocess.run([adb_binary(), "-P", str(port), "start-server"], env=env, capture_output=True,
                   timeout=timeout_s, check=False)
    deadline = time.monotonic() + timeout_s
    while not server_answers("127.0.0.1", port):
        if time.monotonic() > deadline:
            raise DeviceOfflineError("adb-server", f"could not start an adb server on port {port}")
        time.sleep(0.05)
    state_dir.mkdir(parents=True, exist_ok=True)
    started = _started(state_dir)
    if port not in started:
        started.append(port)
    (state_dir / _STATE_FILE).write_text(json.dumps({"ports": started}))
    logger.info("started an adb server on port %d", port)
    return True


def _started(state_dir: Path) -> list[int]:
    try:
        return [int(p) for p in json.loads((state_dir / _STATE_FILE).read_text()).get("ports", [])]
    except (OSError, ValueError, AttributeError, TypeError):
        return []


def stop_started_server(state_dir: Path, *, timeout_s: float = 10.0) -> list[int]:
    """Stop the adb servers :func:`ensure_server` started; returns their ports."""
    stopped = []
    for port in _started(state_dir):
        if server_answers("127.0.0.1", port):
            env = dict(os.environ, ANDROID_ADB_SERVER_PORT=str(port))
            subprocess.run([adb_binary(), "-P", str(port), "kill-server"], env=env, capture_output=True,
                           timeout=timeout_s, check=False)
            deadline = time.monotonic() + timeout_s
            while server_answers("127.0.0.1", port) and time.monotonic() < deadline:
                time.sleep(0.05)
            stopped.append(port)
    (state_dir / _STATE_FILE).unlink(missing_ok=True)
    return stopped
