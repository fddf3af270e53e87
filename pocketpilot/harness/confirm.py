"""Confirmation policies for calls that need the user's yes (power off, send a message, delete).

Which calls ask is decided by their declared semantics, never their names: destructive, or
effect send, delete or purchase (``ToolSpec.needs_confirmation``), and for a UI action on a
device what it would hit (a tap on "Send" is a send). The policy gets the call and the spec
with those effective semantics. A non-interactive run has nobody to ask, so the default
denies, and the trace says so: an agent that sends a message because nobody objected is worse
than one that stops to ask.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

from ..contracts import ToolCall, ToolSpec

__all__ = ["AllowAll", "CallbackConfirmation", "DenyAll"]


class DenyAll:
    """Deny every call that needs confirmation (the non-interactive default)."""

    reason = "non-interactive run: calls that need confirmation are denied by default"

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        """Always False."""
        return False


class AllowAll:
    """Allow every call that needs confirmation: sandboxes, benchmarks and tests, never a user's phone."""

    reason = "allowed by policy (allow all)"

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        """Always True."""
        return True


class CallbackConfirmation:
    """Ask a callback (a UI dialog, a terminal prompt); sync callbacks run off the event loop."""

    reason = "answered by the confirmation callback"

    def __init__(self, callback: Callable[[ToolCall, ToolSpec], bool | Awaitable[bool]]) -> None:
        self._callback = callback

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        """Whatever the callback answers."""
        if inspect.iscoroutinefunction(self._callback):
            return bool(await self._callback(call, spec))
        answer = await asyncio.to_thread(self._callback, call, spec)
        if inspect.isawaitable(answer):
            answer = await answer
        return bool(answer)
