"""What the simulated phone needs from whatever holds the phone's state.

The adb/uiautomator2 front end (shell, sync, JSON-RPC) only talks to a :class:`PhoneBackend`;
the state itself lives in the sandbox phone (see ``_sandbox_backend``) or, for tests of the
wire layers alone, in the small built-in :class:`~._mini.MiniPhone`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ._ui import UiNode

__all__ = ["Intent", "MemFS", "PhoneBackend", "SETTINGS_KEYS", "normalize_key"]

SETTINGS_KEYS = {
    "wifi": ("global", "wifi_on"),
    "bluetooth": ("global", "bluetooth_on"),
    "do_not_disturb": ("global", "zen_mode"),
    "brightness": ("system", "screen_brightness"),
    "ring_mode": ("global", "mode_ringer"),
    "airplane_mode": ("global", "airplane_mode_on"),
}
"""Android settings (namespace, key) behind each phone setting the tools expose."""

_KEYCODES = {
    3: "HOME",
    4: "BACK",
    19: "DPAD_UP",
    20: "DPAD_DOWN",
    21: "DPAD_LEFT",
    22: "DPAD_RIGHT",
    23: "DPAD_CENTER",
    24: "VOLUME_UP",
    25: "VOLUME_DOWN",
    26: "POWER",
    27: "CAMERA",
    66: "ENTER",
    67: "DEL",
    82: "MENU",
    84: "SEARCH",
    164: "VOLUME_MUTE",
    187: "APP_SWITCH",
    224: "WAKEUP",
}
_ALIASES = {
    "RECENT": "APP_SWITCH",
    "DELETE": "DEL",
    "CENTER": "DPAD_CENTER",
    "UP": "DPAD_UP",
    "DOWN": "DPAD_DOWN",
    "LEFT": "DPAD_LEFT",
    "RIGHT": "DPAD_RIGHT",
}


def normalize_key(key: str | int) -> str:
    """``3``, ``"KEYCODE_HOME"``, ``"home"`` -> ``"HOME"`` (unknown codes keep their number)."""
    if isinstance(key, int) or str(key).isdigit():
        return _KEYCODES.get(int(key), str(int(key)))
    name = str(key).upper().removeprefix("KEYCODE_")
    return _ALIASES.get(name, name)


@dataclass(frozen=True)
class Intent:
    """The parts of an ``am start`` intent the simulated apps look at."""

    action: str | None = None
    data: str | None = None
    component: str | None = None
    """``package/activity`` (activity may start with a dot)."""
    package: str | None = None
    categories: tuple[str, ...] = ()
    extras: dict[str, str] = field(default_factory=dict)


@dataclass
class _Entry:
    data: bytes
    mode: int
    mtime: int


class MemFS:
    """A tiny in-memory filesystem: regular files and implicit directories."""

    def __init__(self) -> None:
        self._files: dict[str, _Entry] = {}
        self._dirs: set[str] = {"/", "/sdcard", "/data", "/data/local", "/data/local/tmp", "/system"}

    @staticmethod
    def _norm(path: str) -> str:
        parts = [p for p in path.split("/") if p and p != "."]
        return "/" + "/".join(parts)

    def write(self, path: str, data: bytes, mode: int = 0o100644, mtime: int | None = None) -> None:
        """Create or replace a file (its parent directories spring into existence)."""
        path = self._norm(path)
        self._files[path] = _Entry(bytes(data), mode, int(mtime if mtime is not None else time.time()))
        parent = path.rsplit("/", 1)[0] or "/"
        while parent not in self._dirs:
            self._dirs.add(parent)
            parent = parent.rsplit("/", 1)[0] or "/"

    def read(self, path: str) -> bytes:
        """File contents; FileNotFoundError or IsADirectoryError otherwise."""
        path = self._norm(path)
        if path in self._dirs:
            raise IsADirectoryError(path)
        try:
            return self._files[path].data
        except KeyError:
            raise FileNotFoundError(path) from None

    def stat(self, path: str) -> tuple[int, int, int] | None:
        """(mode, size, mtime), or None when nothing is there."""
        path = self._norm(path)
        if path in self._dirs:
            return 0o040755, 4096, 0
        entry = self._files.get(path)
        return (entry.mode, len(entry.data), entry.mtime) if entry else None

    def listdir(self, path: str) -> list[tuple[str, int, int, int]]:
        """(name, mode, size, mtime) of the direct children of a directory."""
        path = self._norm(path)
        if path not in self._dirs:
            raise NotADirectoryError(path)
        prefix = path.rstrip("/") + "/"
        out = []
        for name in sorted(
            {
                p[len(prefix) :].split("/")[0]
                for p in [*self._files, *self._dirs]
                if p.startswith(prefix) and p != path
            }
        ):
            st = self.stat(prefix + name)
            assert st is not None
            out.append((name, *st))
        return out

    def remove(self, path: str, recursive: bool = False) -> None:
        """Delete a file (or, with ``recursive``, a directory tree)."""
        path = self._norm(path)
        if path in self._files:
            del self._files[path]
            return
        if path in self._dirs and recursive:
            prefix = path.rstrip("/") + "/"
            self._files = {p: e for p, e in self._files.items() if not p.startswith(prefix)}
            self._dirs = {d for d in self._dirs if d != path and not d.startswith(prefix)}
            return
        if path in self._dirs:
            raise IsADirectoryError(path)
        raise FileNotFoundError(path)


@runtime_checkable
class PhoneBackend(Protocol):
    """The phone state behind the simulated device; every call happens on the server's loop thread."""

    screen_size: tuple[int, int]
    fs: MemFS

    def props(self) -> dict[str, str]:
        """System properties (``getprop``): model, SDK level, serial, ..."""
        ...

    def get_setting(self, namespace: str, key: str) -> str | None:
        """``settings get``: the stored string, or None."""
        ...

    def put_setting(self, namespace: str, key: str, value: str) -> None:
        """``settings put``; keys the phone models change its state."""
        ...

    def packages(self) -> list[str]:
        """Installed package names."""
        ...

    def foreground(self) -> tuple[str, str]:
        """(package, activity) of the focused window."""
        ...

    def start_activity(self, intent: Intent) -> str | None:
        """Bring up what the intent resolves to; an error message if nothing handles it."""
        ...

    def force_stop(self, package: str) -> None:
        """Kill an app (back to the launcher if it was in front)."""
        ...

    def ui_tree(self) -> UiNode:
        """The current screen as a tree of views covering the whole display."""
        ...

    def tap(self, x: float, y: float) -> None:
        """A touch at screen coordinates."""
        ...

    def type_text(self, text: str) -> None:
        """Text typed into the focused field."""
        ...

    def set_field_text(self, node: UiNode, text: str) -> None:
        """Replace the text of an editable view (uiautomator ``setText``)."""
        ...

    def key(self, name: str) -> None:
        """A key event, by normalized name (``HOME``, ``BACK``, ``ENTER``, ...)."""
        ...

    def swipe(self, x1: float, y1: float, x2: float, y2: float) -> None:
        """A swipe gesture (scrolls lists)."""
        ...
