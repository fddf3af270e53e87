"""The executor protocol: what the harness needs from whatever changes device or app state.

It lives with the executors, not the harness, so a backend (sandbox, adb, MCP, a user's
world) depends only on the contract, never on the loop that drives it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..contracts import ToolCall, ToolResult, ToolSpec

__all__ = ["Executor"]


@runtime_checkable
class Executor(Protocol):
    """The only thing that changes device or app state."""

    def tools(self) -> list[ToolSpec]:
        """The tools this executor can run now."""
        ...

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one call. Tool failures come back as ``ok=False``; only a lost device raises."""
        ...
