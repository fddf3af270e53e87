"""pocketpilot as a local service: ``pocketpilot serve`` (HTTP + Server-Sent Events).

A companion app (Kotlin, Swift, a web page) cannot call Python; it talks to this service
instead: it opens a session on a phone, sends requests, watches the steps arrive, answers
confirmations and questions in its own UI, and cancels. The trace file stays the one record of
each run; the event stream is a view of it. Needs the ``serve`` extra (starlette, uvicorn).
"""

from __future__ import annotations

from .app import SESSION_KEY_HEADER, create_app
from .auth import check_bind, is_loopback, load_or_create_token
from .devices import AdbDevice, DeviceOpener, McpDevice, OpenedDevice, SandboxDevice, SimPhoneDevice
from .errors import ServeError
from .questions import Answer, Question, ServeConfirmation
from .sessions import MemoryBinding, RequestBody, ServeConfig, SessionCreate, SessionRegistry, SessionStatus

__all__ = [
    "SESSION_KEY_HEADER",
    "AdbDevice",
    "Answer",
    "DeviceOpener",
    "McpDevice",
    "MemoryBinding",
    "OpenedDevice",
    "Question",
    "RequestBody",
    "SandboxDevice",
    "ServeConfig",
    "ServeConfirmation",
    "ServeError",
    "SessionCreate",
    "SessionRegistry",
    "SessionStatus",
    "SimPhoneDevice",
    "check_bind",
    "create_app",
    "is_loopback",
    "load_or_create_token",
]
