"""Drive Android devices over adb (adbutils + uiautomator2) as a pocketpilot Executor."""

from __future__ import annotations

from ._errors import DeviceOutputError
from .devices import DeviceInfo, alist_devices, connect_device, list_devices
from .executor import AdbExecutor, AdbExecutorConfig, DeviceHealth, ShellResult
from .journal import ActionJournal, JournalEntry
from .screen import Element, Screen, parse_screen
from .ui_effects import UiEffectClassifier

__all__ = [
    "ActionJournal",
    "AdbExecutor",
    "AdbExecutorConfig",
    "DeviceHealth",
    "DeviceInfo",
    "DeviceOutputError",
    "Element",
    "JournalEntry",
    "Screen",
    "ShellResult",
    "UiEffectClassifier",
    "alist_devices",
    "connect_device",
    "list_devices",
    "parse_screen",
]
