"""Loopback ports for test adb servers and simulated phones (imported by the conftest and tests alike)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A free loopback port outside 5555-5585 (adb probes those as emulators) and not 5037."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not 5555 <= port <= 5585 and port != 5037:
            return port
