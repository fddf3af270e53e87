"""A pinboard MCP server (mcp 2.x) whose tools declare what they do, for `pocketpilot run --mcp`.

    pocketpilot run --mcp "python examples/mcp_pinboard_server.py" "pin a note: buy milk"

Three tools, each with MCP tool annotations, because pocketpilot reads a tool's semantics from
them and never from its name: ``list_pins`` is read-only, ``pin_note`` adds (not destructive),
``unpin_all`` is destructive, so it goes through the confirmation policy (``--yes`` or a
prompt). Pins live in memory for the life of the server process; pass ``--file PATH`` to keep
them in a JSON file across runs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("pinboard")
_pins: list[str] = []
_file: Path | None = None


def _save() -> None:
    if _file is not None:
        _file.write_text(json.dumps(_pins))


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def list_pins() -> list[str]:
    """The notes pinned to the board, oldest first."""
    return list(_pins)


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                         open_world_hint=False))
def pin_note(text: str) -> str:
    """Pin a short note to the board.

    Args:
        text: The note, e.g. "buy milk".
    """
    _pins.append(text)
    _save()
    return f"pinned ({len(_pins)} on the board)"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                         open_world_hint=False))
def unpin_all() -> str:
    """Remove every note from the board (cannot be undone)."""
    count = len(_pins)
    _pins.clear()
    _save()
    return f"removed {count} notes"


def main() -> None:
    """Serve over stdio, or streamable HTTP with --http PORT."""
    global _file
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, help="keep the pins in this JSON file")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT/mcp")
    args = parser.parse_args()
    if args.file is not None:
        _file = args.file
        if _file.exists():
            _pins.extend(json.loads(_file.read_text()))
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
