"""Run a :class:`SimPhone` on its own event loop in a background thread.

Tests and benchmarks drive the phone with synchronous clients (the adb binary, adbutils,
uiautomator2) from the main thread, so the phone needs a loop that is not the test's.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from ._mini import MiniPhone
from ._server import Faults, SimPhone
from .backend import PhoneBackend

__all__ = ["ThreadedSimPhone"]

T = TypeVar("T")


class ThreadedSimPhone:
    """A simulated phone served from a daemon thread; use as a context manager or start()/stop()."""

    def __init__(
        self,
        backend: PhoneBackend | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: Faults | None = None,
    ) -> None:
        self.backend = backend if backend is not None else MiniPhone()
        self._host, self._port, self._faults = host, port, faults
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.phone: SimPhone | None = None

    def start(self) -> ThreadedSimPhone:
        """Start the loop thread and bind the port; returns self."""
        ready: Future[None] = Future()
        self._loop = asyncio.new_event_loop()

        def main() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self.phone = SimPhone(self.backend, host=self._host, port=self._port, faults=self._faults)
            try:
                self._loop.run_until_complete(self.phone.start())
            except OSError as exc:
                ready.set_exception(exc)
                return
            ready.set_result(None)
            self._loop.run_forever()

        self._thread = threading.Thread(target=main, name="simphone", daemon=True)
        self._thread.start()
        ready.result(timeout=10)
        return self

    @property
    def port(self) -> int:
        """Bound port."""
        assert self.phone is not None
        return self.phone.port

    @property
    def serial(self) -> str:
        """``127.0.0.1:PORT``, the serial adb lists after ``adb connect``."""
        assert self.phone is not None
        return self.phone.serial

    @property
    def faults(self) -> Faults:
        """The live fault settings (plain attribute writes are seen by the loop at once)."""
        assert self.phone is not None
        return self.phone.faults

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on the phone's loop thread and return its result (state access)."""
        assert self._loop is not None
        fut: Future[T] = Future()

        def run() -> None:
            try:
                fut.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                fut.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return fut.result(timeout=10)

    def drop_connections(self) -> int:
        """Cut every adb transport connection now."""
        assert self.phone is not None
        return self.call(self.phone.drop_connections)

    def stop(self) -> None:
        """Close the server and join the thread."""
        if self._loop is None or self._thread is None:
            return
        if self.phone is not None and self._loop.is_running():
            asyncio.run_coroutine_threadsafe(self.phone.stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
        self._loop = self._thread = None

    def __enter__(self) -> ThreadedSimPhone:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
