"""Start and stop a simulated phone as a background process (``pocketpilot simphone start|stop``).

The process writes ``simphone.json`` (pid, port, serial) into a state directory once its port
is bound; :func:`start_simphone` waits for that file, :func:`stop_simphone` reads it back.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from ...errors import UsageError
from .backend import PhoneBackend

__all__ = [
    "BackendName",
    "SimPhoneInfo",
    "default_backend",
    "simphone_status",
    "start_simphone",
    "stop_simphone",
]

logger = logging.getLogger(__name__)

BackendName = Literal["auto", "sandbox", "mini"]
STATE_FILE = "simphone.json"


@dataclass(frozen=True)
class SimPhoneInfo:
    """A running background simulated phone."""

    pid: int
    port: int
    host: str
    backend: str

    @property
    def serial(self) -> str:
        """What ``adb connect`` takes and ``adb devices`` lists."""
        return f"{self.host}:{self.port}"


def default_backend(name: BackendName = "auto") -> PhoneBackend:
    """The phone state to serve: the sandbox phone when it is available, else the mini phone."""
    if name in {"auto", "sandbox"}:
        try:
            from ._sandbox_backend import SandboxBackend
        except ImportError as exc:
            if name == "sandbox":
                raise UsageError(f"the sandbox phone backend is not available: {exc}") from exc
            logger.debug("sandbox backend unavailable (%s); using the mini phone", exc)
        else:
            return SandboxBackend()
    from ._mini import MiniPhone

    return MiniPhone()


def _state_path(state_dir: str | os.PathLike[str]) -> Path:
    return Path(state_dir) / STATE_FILE


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_simphone(
    state_dir: str | os.PathLike[str],
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    backend: BackendName = "auto",
    timeout_s: float = 15.0,
) -> SimPhoneInfo:
    """Start a simulated phone in a detached process and wait until it listens.

    Args:
        state_dir: where ``simphone.json`` and the log go; one phone per directory.
        port: TCP port, 0 for a free one. Avoid 5555-5585: adb probes those as emulators.
        host: interface to bind (loopback by default).
        backend: ``auto`` (sandbox if installed), ``sandbox`` or ``mini``.
        timeout_s: how long to wait for the port file.

    Raises:
        UsageError: a phone from this state dir is still running, or it failed to start.
    """
    state = _state_path(state_dir)
    state.parent.mkdir(parents=True, exist_ok=True)
    if state.exists():
        info = _read(state)
        if info is not None and _alive(info.pid):
            raise UsageError(
                f"a simulated phone is already running from {state_dir} (pid {info.pid}, "
                f"{info.serial}); stop it first"
            )
        state.unlink()
    if 5555 <= port <= 5585:
        raise UsageError("ports 5555-5585 are probed by adb as emulators; pick another")
    log = open(state.parent / "simphone.log", "ab")  # noqa: SIM115 - handed to the child
    cmd = [
        sys.executable,
        "-m",
        "pocketpilot.executor.simphone",
        "serve",
        "--host",
        host,
        "--port",
        str(port),
        "--backend",
        backend,
        "--state-file",
        str(state),
    ]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env, start_new_session=True
    )
    log.close()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if state.exists():
            info = _read(state)
            if info is not None:
                return info
        if proc.poll() is not None:
            raise UsageError(
                f"simulated phone exited with {proc.returncode}; see {state.parent / 'simphone.log'}"
            )
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise UsageError(f"simulated phone did not start within {timeout_s}s")


def _read(state: Path) -> SimPhoneInfo | None:
    try:
        return SimPhoneInfo(**json.loads(state.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def write_state(state: Path, info: SimPhoneInfo) -> None:
    """Atomically publish the running phone's pid and port (called by the child process)."""
    tmp = state.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(info)))
    tmp.replace(state)


def stop_simphone(state_dir: str | os.PathLike[str], *, timeout_s: float = 10.0) -> bool:
    """Stop the phone started from ``state_dir``; False when none was running."""
    state = _state_path(state_dir)
    info = _read(state) if state.exists() else None
    if info is None:
        return False
    stopped = False
    if _alive(info.pid):
        os.kill(info.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and _alive(info.pid):
            _reap(info.pid)
            time.sleep(0.05)
        if _alive(info.pid):
            os.kill(info.pid, signal.SIGKILL)
            _reap(info.pid)
        stopped = True
    state.unlink(missing_ok=True)
    return stopped


def _reap(pid: int) -> None:
    """Collect our own child's exit status so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def simphone_status(state_dir: str | os.PathLike[str]) -> SimPhoneInfo | None:
    """The phone started from ``state_dir`` if it is still running, else None (stale files are removed)."""
    state = _state_path(state_dir)
    info = _read(state) if state.exists() else None
    if info is None:
        return None
    if not _alive(info.pid):
        state.unlink(missing_ok=True)
        return None
    return info
