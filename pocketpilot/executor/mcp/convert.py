"""MCP shapes -> pocketpilot's contract: tool listings to ToolSpec, call results to ToolResult."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ...contracts import ToolResult, ToolSpec

__all__ = ["result_from_mcp", "spec_from_mcp", "tool_name"]

_BAD = re.compile(r"[^A-Za-z0-9_.-]")


def tool_name(name: str, prefix: str | None, taken: Iterable[str] = ()) -> str:
    """A valid, unique ToolSpec name for an MCP tool (MCP allows names our grammar does not)."""
    base = _BAD.sub("_", f"{prefix}.{name}" if prefix else name)
    if not re.match(r"[A-Za-z_]", base):
        base = f"_{base}"
    base = base[:64]
    taken = set(taken)
    candidate, n = base, 2
    while candidate in taken:
        suffix = f"_{n}"
        candidate, n = base[: 64 - len(suffix)] + suffix, n + 1
    return candidate


def spec_from_mcp(tool: Any, name: str, *, assume_destructive: bool) -> ToolSpec:
    """ToolSpec of one ``mcp.types.Tool``: inputSchema -> parameters, outputSchema -> result_schema.

    MCP's ``destructiveHint`` defaults to true when a server says nothing; gating every
    unannotated tool behind confirmation would make most servers unusable, so that default
    applies only with ``assume_destructive``. An explicit hint always counts, and a tool
    marked read-only is never destructive.
    """
    hints = tool.annotations
    read_only = bool(hints is not None and hints.read_only_hint)
    hinted = hints.destructive_hint if hints is not None else None
    destructive = not read_only and (hinted if hinted is not None else assume_destructive)
    return ToolSpec(
        name=name,
        description=(tool.description or tool.title or "").strip(),
        parameters=dict(tool.input_schema or {"type": "object", "properties": {}}),
        destructive=bool(destructive),
        result_schema=dict(tool.output_schema) if tool.output_schema else None,
    )


def _content(block: Any) -> Any:
    if getattr(block, "type", None) == "text":
        return block.text
    return block.model_dump(mode="json", exclude_none=True, by_alias=True)


def result_from_mcp(result: Any) -> ToolResult:
    """Normalize a ``CallToolResult``: structured content wins, else the content blocks.

    ``isError`` becomes ``ok=False`` with code ``mcp_tool_error`` and the text as message.
    """
    blocks = [_content(b) for b in result.content or []]
    if result.is_error:
        message = (
            " ".join(b for b in blocks if isinstance(b, str)).strip() or "the MCP tool reported an error"
        )
        return ToolResult.failure("mcp_tool_error", message)
    if result.structured_content is not None:
        return ToolResult.success(result.structured_content)
    if len(blocks) == 1:
        return ToolResult.success(blocks[0])
    return ToolResult.success(blocks)
