"""One Executor over several: route each call by tool name, in priority order.

The report's hybrid environment in one object: sandbox or device tools first, MCP tools next,
the LLM-simulated backend last for whatever is left. A tool name offered by two backends goes
to the first, so a real implementation always shadows a simulated one. Tool lists are read
at call time, because some backends (MCP servers) can change theirs during a session.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence

from ..contracts import ToolCall, ToolEffect, ToolResult, ToolSpec
from ..errors import UsageError
from .base import Executor
from .effects import ClassifiesEffects

__all__ = ["CompositeExecutor"]

logger = logging.getLogger(__name__)


class CompositeExecutor:
    """Routes each call to the first executor that offers the tool.

    Args:
        executors: in priority order (e.g. ``[adb, mcp, simulated]``).
    """

    def __init__(self, executors: Sequence[Executor]) -> None:
        if not executors:
            raise UsageError("CompositeExecutor needs at least one executor")
        self.executors = list(executors)

    def _routes(self) -> dict[str, tuple[Executor, ToolSpec]]:
        routes: dict[str, tuple[Executor, ToolSpec]] = {}
        for executor in self.executors:
            for spec in executor.tools():
                if spec.name in routes:
                    logger.debug(
                        "tool %s of %s shadowed by an earlier executor", spec.name, type(executor).__name__
                    )
                    continue
                routes[spec.name] = (executor, spec)
        return routes

    def tools(self) -> list[ToolSpec]:
        """The union of the members' tools, first offer wins."""
        return [spec for _, spec in self._routes().values()]

    def route(self, name: str) -> Executor | None:
        """The executor a call of ``name`` goes to (None if nobody offers it)."""
        found = self._routes().get(name)
        return found[0] if found else None

    async def call(self, call: ToolCall) -> ToolResult:
        """Route one call; an unknown name is a tool failure, a member's ExecutorError propagates."""
        executor = self.route(call.name)
        if executor is None:
            names = ", ".join(self._routes())
            return ToolResult.failure("unknown_tool", f"no tool named {call.name!r}; available: {names}")
        return await executor.call(call)

    async def effect_of(self, call: ToolCall) -> ToolEffect | None:
        """The routed member's classification of ``call`` (None: the member has none, or nobody offers it).

        Without this a device behind a composite would lose its tap classification, and a tap
        on "Send" would count as whatever the tap tool declares.
        """
        executor = self.route(call.name)
        if executor is None or not isinstance(executor, ClassifiesEffects):
            return None
        return await executor.effect_of(call)

    async def aclose(self) -> None:
        """Close every member that can be closed (all of them, even if one fails)."""
        errors: list[BaseException] = []
        for executor in self.executors:
            close = getattr(executor, "aclose", None)
            if close is None:
                continue
            try:
                result = close()
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:  # noqa: BLE001 - collected and re-raised below
                errors.append(exc)
        if errors:
            raise errors[0]

    async def __aenter__(self) -> CompositeExecutor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
