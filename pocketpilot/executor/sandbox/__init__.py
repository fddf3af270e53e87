"""The sandbox phone: deterministic, resettable, seeded world state with typed tools.

Use::

    phone = SandboxPhone(seed=0)
    executor = SandboxExecutor(phone, ["settings", "send_sms"])  # app names or tool names
    result = await executor.call(ToolCall(name="set_wifi", arguments={"enabled": False}))
    phone.state.settings.wifi  # False

``phone.catalog()`` describes the world as data: every app with its domain, state section,
record lists and tool specs (``pocketpilot sandbox apps`` prints it).
"""

from __future__ import annotations

from .apps import EVERYDAY_APPS
from .catalog import AppEntry, RecordList, SandboxCatalog
from .diff import StateChange, diff_states
from .executor import SandboxExecutor
from .paths import MISSING, check_path, resolve_path
from .phone import SandboxPhone
from .seeding import DEFAULT_NOW, default_state
from .state import PhoneState

__all__ = [
    "DEFAULT_NOW",
    "EVERYDAY_APPS",
    "AppEntry",
    "MISSING",
    "PhoneState",
    "RecordList",
    "SandboxCatalog",
    "SandboxExecutor",
    "SandboxPhone",
    "StateChange",
    "check_path",
    "default_state",
    "diff_states",
    "resolve_path",
]
