"""An exclusive lock on a working folder, so two processes never interleave its files.

``pocketpilot evolve`` keeps its whole state in its output folder and resumes from it; two
runs on one folder would each append episodes and write decisions the other does not expect.
The lock is an ``fcntl.flock`` on a file in the folder, holding the holder's pid:

- a second process is refused at once (:class:`~pocketpilot.errors.FolderLockedError`,
  naming the holder's pid), before it writes anything;
- the kernel drops a flock when its process dies, however it dies, so a killed holder never
  blocks the folder: the next process gets the lock, finds the dead holder's pid still in the
  file (a clean release empties it), and says it is taking the lock over.

The lock is re-entrant within one :class:`FolderLock` object (a loop that takes it for its
run may call code that takes it again); two objects on one folder exclude each other even in
one process, as two processes would.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from ..errors import FolderLockedError

__all__ = ["LOCK_NAME", "FolderLock"]

logger = logging.getLogger(__name__)

LOCK_NAME = ".lock"
"""The lock file's name inside the folder (the folder's readers ignore it)."""


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


class FolderLock:
    """The exclusive lock of one folder (created if missing), for one holder at a time.

    Args:
        folder: the folder to lock.
        on_takeover: called with the pid of a holder that ended without releasing the lock
            (killed), when this one takes it over; a warning is logged as well.
    """

    def __init__(self, folder: str | os.PathLike[str], *, on_takeover: Callable[[int], None] | None = None) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.on_takeover = on_takeover
        self._fd: int | None = None
        self._depth = 0

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._fd is not None

    def acquire(self) -> int | None:
        """Take the lock (again, when this object holds it already).

        Returns:
            The pid of a killed holder whose lock was taken over, else None.

        Raises:
            FolderLockedError: another holder has it.
        """
        if self._fd is not None:
            self._depth += 1
            return None
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise FolderLockedError(str(self.folder), holder) from None
        except BaseException:
            os.close(fd)
            raise
        stale = _read_pid(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd, self._depth = fd, 1
        if stale is None:
            return None
        state = "no longer running" if not _alive(stale) else "no longer holding it"
        logger.warning("%s: taking over the lock of pid %d (%s: it ended without releasing it)",
                       self.folder, stale, state)
        if self.on_takeover is not None:
            self.on_takeover(stale)
        return stale

    def release(self) -> None:
        """Give the lock up (the last release of a re-entered lock does); the file is left, emptied."""
        if self._fd is None:
            return
        self._depth -= 1
        if self._depth > 0:
            return
        fd, self._fd = self._fd, None
        try:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # a clean end: the next holder has nothing to take over
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
