"""The Executor over a sandbox phone, exposing all or some of its tools."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ...contracts import ToolCall, ToolResult, ToolSpec
from ...errors import UsageError
from ..tools import ToolRegistry
from .phone import SandboxPhone

__all__ = ["SandboxExecutor"]

logger = logging.getLogger(__name__)


class SandboxExecutor:
    """Runs tool calls against a :class:`SandboxPhone` (implements the harness ``Executor``).

    Args:
        phone: The phone to act on (shared, not copied: verifiers read its state afterwards).
        tools: Tool names to expose; an app name (e.g. ``"notes"``) stands for all its tools.
            None exposes everything.

    Raises:
        UsageError: if ``tools`` names a tool or app the sandbox does not have.
    """

    def __init__(self, phone: SandboxPhone, tools: Sequence[str] | None = None) -> None:
        self.phone = phone
        full = phone.registry()
        if tools is None:
            self._registry = full
            return
        names: list[str] = []
        unknown: list[str] = []
        for name in tools:
            if name in phone.apps:
                names.extend(phone.tool_names(name))
            elif name in full:
                names.append(name)
            else:
                unknown.append(name)
        if unknown:
            raise UsageError(
                f"unknown sandbox tool(s) {', '.join(map(repr, unknown))}; "
                f"apps: {', '.join(phone.apps)}; tools: {', '.join(full.names())}"
            )
        self._registry: ToolRegistry = full.subset(dict.fromkeys(names))

    @property
    def registry(self) -> ToolRegistry:
        """The registry of exposed tools."""
        return self._registry

    def tools(self) -> list[ToolSpec]:
        """Specs of the exposed tools."""
        return self._registry.tools()

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one call; an unexposed tool is an ``unknown_tool`` failure, never an exception."""
        result = await self._registry.call(call)
        logger.debug(
            "sandbox %s(%s) -> %s", call.name, call.arguments, result.error.code if result.error else "ok"
        )
        return result
