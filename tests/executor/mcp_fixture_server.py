"""A real MCP server for the executor tests (launched by them over stdio or streamable HTTP).

Usage: ``python mcp_fixture_server.py stdio`` or ``python mcp_fixture_server.py http PORT``.
Its ``crash`` tool kills the process mid-call, to test a server that dies mid-session.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("pocketpilot-test")
_notes: list[str] = []


class Forecast(BaseModel):
    city: str
    celsius: float


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def forecast(city: str) -> Forecast:
    """Weather forecast for a city."""
    return Forecast(city=city, celsius=21.5)


@server.tool()
def add_note(text: str) -> str:
    """Store a note; returns how many notes are stored."""
    _notes.append(text)
    return f"{len(_notes)} notes"


@server.tool()
def refuse(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(reason)


@server.tool(name="weird name!")
def weird() -> str:
    """A tool whose name is not a valid pocketpilot tool name."""
    return "ok"


@server.tool()
def sleep(seconds: float) -> str:
    """Answer after a delay."""
    time.sleep(seconds)
    return "awake"


@server.tool()
def crash() -> str:
    """Kill the server process without answering."""
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
