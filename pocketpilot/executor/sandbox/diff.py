"""State diffs: what an episode changed, for "nothing else changed" checks and traces."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from .state import PhoneState

__all__ = ["StateChange", "diff_states", "diff_values"]


class StateChange(BaseModel):
    """One changed path: its value before and after (``None`` where absent)."""

    model_config = ConfigDict(frozen=True)

    path: str
    before: Any = None
    after: Any = None


def _walk(path: str, a: Any, b: Any, out: list[StateChange]) -> None:
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in a:
                out.append(StateChange(path=sub, after=b[key]))
            elif key not in b:
                out.append(StateChange(path=sub, before=a[key]))
            else:
                _walk(sub, a[key], b[key], out)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(f"{path}.{i}" if path else str(i), x, y, out)
        return
    # Scalars, or lists whose length changed (an item added or removed): report the whole value.
    out.append(StateChange(path=path, before=a, after=b))


def diff_states(before: PhoneState, after: PhoneState) -> list[StateChange]:
    """Every leaf-level change from ``before`` to ``after``, in path order.

    Lists of equal length are compared element-wise; a list that grew or shrank is reported as
    one change of the whole list, since indices after an insert or delete mean nothing.
    """
    return diff_values(before.model_dump(mode="json"), after.model_dump(mode="json"))


def diff_values(before: Any, after: Any) -> list[StateChange]:
    """:func:`diff_states` of two JSON-like values (any world's dumped state)."""
    out: list[StateChange] = []
    _walk("", before, after, out)
    return out
