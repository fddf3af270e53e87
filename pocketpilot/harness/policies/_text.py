"""How policies write calls and find records in results (shared wording, no semantics)."""

from __future__ import annotations

import json
from typing import Any

from ...contracts import ToolCall

__all__ = ["call_text", "records"]


def call_text(call: ToolCall) -> str:
    """A call as the planner would read it in code: ``start_cast(target="Office Display")``.

    Written as a call, not as JSON: a small planner pasted a JSON action found inside a notice
    into a refusal's reason.
    """
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def records(data: Any, id_field: str | None) -> list[dict[str, Any]]:
    """The records in a tool result: the result itself or the items of a listing, each a dict
    with a string or integer in ``id_field``, the field its tool declares as a record's id
    (``ToolSpec.id_field``).

    None (the tool declares no id field) finds none, whatever the result's fields are called:
    which field is an id is the tool's declaration, never read off a field's name.
    """
    if id_field is None:
        return []
    items = data if isinstance(data, list) else [data]
    return [d for d in items if isinstance(d, dict) and isinstance(d.get(id_field), (str, int))]
