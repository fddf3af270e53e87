"""Confirmation policies for destructive tools (power off, send a message, delete).

A non-interactive run has nobody to ask, so the default denies, and the trace says so: an
agent that sends a message because nobody objected is worse than one that stops to ask.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

from ..contracts import ToolCall, ToolSpec

__all__ = ["AllowAll", "CallbackConfirmation", "DenyAll"]


class DenyAll:
    """Deny every destructive call (the non-interactive default)."""

    reason = "non-interactive run: destructive calls are denied by default"

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        """Always False."""
        return False


class AllowAll:
    """Allow every destructive call: for sandboxes, benchmarks and tests, never for a user's phone."""

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
