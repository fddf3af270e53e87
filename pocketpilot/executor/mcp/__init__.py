"""MCP tools through the Executor protocol (needs the optional ``mcp`` extra)."""

from __future__ import annotations

from .convert import result_from_mcp, spec_from_mcp, tool_name
from .errors import McpConnectionError, McpServerError, McpTimeout
from .executor import McpExecutor, http_server, stdio_server

__all__ = [
    "McpConnectionError",
    "McpExecutor",
    "McpServerError",
    "McpTimeout",
    "http_server",
    "result_from_mcp",
    "spec_from_mcp",
    "stdio_server",
    "tool_name",
]
