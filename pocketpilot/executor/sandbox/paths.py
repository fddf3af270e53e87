"""Dotted paths into the phone state: how criteria and diffs name a piece of the world.

A path is field names separated by dots; a list element is addressed by its integer index and a
dict entry by its key: ``settings.wifi``, ``notes.items.0.title``, ``health.days.2025-03-13.steps``.
(Dates contain no dots, so dict keys with dates stay addressable.)
"""

from __future__ import annotations

import types
import typing
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from .state import PhoneState

__all__ = ["MISSING", "check_path", "resolve_path"]


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()
"""What :func:`resolve_path` returns for a path that does not exist in this state."""


def resolve_path(data: Any, path: str) -> Any:
    """The value at ``path`` in JSON-like ``data`` (a dumped state), or :data:`MISSING`."""
    node = data
    if path in ("", "."):
        return node
    for part in path.split("."):
        if isinstance(node, dict):
            if part not in node:
                return MISSING
            node = node[part]
        elif isinstance(node, list):
            try:
                node = node[int(part)]
            except (ValueError, IndexError):
                return MISSING
        else:
            return MISSING
    return node


def _strip(tp: Any) -> Any:
    """Drop Annotated/Optional wrappers down to the container or model type."""
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def check_path(path: str, model: type[BaseModel] = PhoneState) -> None:
    """Check that ``path`` can exist in a state of type ``model``.

    Raises:
        ValueError: naming the first segment that does not fit the schema.
    """
    tp: Any = model
    walked: list[str] = []
    for part in path.split("."):
        tp = _strip(tp)
        if tp is Any:
            return  # an untyped value (a world's free-form field) may hold anything below
        origin = get_origin(tp) or (tp if tp in (list, dict) else None)
        if isinstance(tp, type) and not origin and issubclass(tp, BaseModel):
            if part not in tp.model_fields:
                where = ".".join(walked) or "the state"
                raise ValueError(
                    f"{path!r}: {where} has no field {part!r} (fields: {', '.join(tp.model_fields)})"
                )
            tp = tp.model_fields[part].annotation
        elif origin is list:
            if not part.lstrip("-").isdigit():
                raise ValueError(f"{path!r}: {'.'.join(walked)} is a list; {part!r} is not an index")
            tp = (get_args(tp) or (Any,))[0]
        elif origin is dict:
            tp = (get_args(tp) or (Any, Any))[1]
        else:
            raise ValueError(f"{path!r}: {'.'.join(walked)} is a plain value; it has no {part!r}")
        walked.append(part)
