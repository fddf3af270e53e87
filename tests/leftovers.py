"""Processes a test run started and left behind (adb servers, llama servers, simulated phones).

Every process the suite starts inherits a marker in its environment, daemons that fork
themselves away (``adb`` re-parents its server to init) included, so the check finds exactly
this run's processes: not another run's on the same machine, not the user's own adb server.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

MARK = "POCKETPILOT_TEST_RUN"


def mark_environment() -> str:
    """Give this run its marker (children inherit it through ``os.environ``)."""
    os.environ.setdefault(MARK, uuid.uuid4().hex)
    return os.environ[MARK]


def leftovers(token: str) -> list[tuple[int, str]]:
    """Live processes other than this one that carry ``token`` (zombies are exiting: not counted)."""
    needle = f"{MARK}={token}".encode()
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
        if state not in ("Z", "X"):
            found.append((int(entry.name), cmd))
    return found


def wait_for_leftovers(token: str, grace_s: float) -> list[tuple[int, str]]:
    """The leftovers still alive after ``grace_s`` (a process killed at teardown may take a moment)."""
    deadline = time.monotonic() + grace_s
    found = leftovers(token)
    while found and time.monotonic() < deadline:
        time.sleep(0.2)
        found = leftovers(token)
    return found


def kill(processes: list[tuple[int, str]]) -> None:
    """SIGKILL what a run left (reported first: the run fails either way)."""
    for pid, _ in processes:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
