"""A simulated Android phone that the real adb server, adbutils and uiautomator2 accept.

See FACTS.md ("Devices") for the protocol facts it follows. Entry points:
:class:`SimPhone` (asyncio), :class:`ThreadedSimPhone` (background thread),
:func:`start_simphone`/:func:`stop_simphone` (background process, for the CLI).
"""

from __future__ import annotations

from ._mini import MiniPhone
from ._server import Faults, SimPhone
from ._thread import ThreadedSimPhone
from ._ui import UiNode, dump_xml
from .backend import SETTINGS_KEYS, Intent, MemFS, PhoneBackend, normalize_key
from .launcher import SimPhoneInfo, default_backend, simphone_status, start_simphone, stop_simphone

__all__ = [
    "Faults",
    "Intent",
    "MemFS",
    "MiniPhone",
    "PhoneBackend",
    "SETTINGS_KEYS",
    "SimPhone",
    "SimPhoneInfo",
    "ThreadedSimPhone",
    "UiNode",
    "default_backend",
    "dump_xml",
    "normalize_key",
    "simphone_status",
    "start_simphone",
    "stop_simphone",
]
