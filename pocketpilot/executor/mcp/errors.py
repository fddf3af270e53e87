"""Typed failures of an MCP server connection (a tool's own error is a ToolResult, not these)."""

from __future__ import annotations

from ...errors import ExecutorError

__all__ = ["McpConnectionError", "McpServerError", "McpTimeout"]


class McpServerError(ExecutorError):
    """An MCP server could not be reached or driven."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"MCP server {server}: {message}")
        self.server = server


class McpConnectionError(McpServerError, ConnectionError):
    """The server could not be started or reached, or it went away mid-session."""


class McpTimeout(McpServerError, TimeoutError):
    """The server did not answer in time."""
