"""MCP shapes -> pocketpilot's contract: tool listings to ToolSpec, call results to ToolResult."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from ...contracts import ToolResult, ToolSpec
from ...errors import ContractError

__all__ = ["MCP_DEFAULTS", "result_from_mcp", "spec_from_mcp", "tool_name"]

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


MCP_DEFAULTS = {"read_only": False, "destructive": True, "idempotent": False, "open_world": True}
"""What the MCP specification assumes of a tool whose server gives no annotation."""

_HINTS = {
    "read_only": "read_only_hint",
    "destructive": "destructive_hint",
    "idempotent": "idempotent_hint",
    "open_world": "open_world_hint",
}


def spec_from_mcp(
    tool: Any, name: str, *, assume_destructive: bool = True, declared: Mapping[str, Any] | None = None
) -> ToolSpec:
    """ToolSpec of one ``mcp.types.Tool``: inputSchema -> parameters, outputSchema -> result_schema,
    annotations -> the semantics.

    A hint the server leaves out takes MCP's default (not read-only, destructive, not
    idempotent, open-world), so an unannotated tool goes through confirmation like any other
    destructive one: the server did not say it is harmless, and nothing else may guess it.
    ``assume_destructive=False`` opts out of the destructive default (a server its user trusts);
    ``declared`` overrides the semantics of this one tool (``{"read_only": True}``), for a
    server that annotates nothing. A read-only tool is never destructive and always idempotent
    (MCP gives the other hints meaning only when ``readOnlyHint`` is false).

    Raises:
        ContractError: ``declared`` holds inconsistent semantics or unknown keys.
    """
    hints = tool.annotations
    values: dict[str, Any] = dict(MCP_DEFAULTS, destructive=assume_destructive)
    for field, hint in _HINTS.items():
        given = getattr(hints, hint, None) if hints is not None else None
        if given is not None:
            values[field] = bool(given)
    values.update(declared or {})
    if values["read_only"]:
        values.update(destructive=False, idempotent=True)
        values.setdefault("effect", "read")
    try:
        return ToolSpec(
            name=name,
            description=(tool.description or tool.title or "").strip(),
            parameters=dict(tool.input_schema or {"type": "object", "properties": {}}),
            result_schema=dict(tool.output_schema) if tool.output_schema else None,
            **values,
        )
    except ValidationError as exc:
        raise ContractError(f"MCP tool {name!r}: {exc.errors(include_url=False)[0]['msg']}") from exc


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
