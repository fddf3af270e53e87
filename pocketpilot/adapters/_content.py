"""Keys η's content leaves out while they hold their default: declared on the field, read generically.

η's version hashes its content (:meth:`pocketpilot.adapters.eta.Eta.content`), and η files are
stored with their version. A key added to one of η's models after such files were written would
change every stored η's content, so each would no longer hash to its recorded version, although
it runs exactly as before. A key added later is therefore declared on its own field::

    hand_back_reads: Annotated[bool, OmitAtDefault()] = False

and the content leaves it out while it holds its default, so an η written before the key existed
hashes as it did; set to anything else, the key is hashed and stored. The marker is plain
``Annotated`` metadata: pydantic keeps it on the field (``FieldInfo.metadata``) and it changes
neither validation nor the models' JSON schema.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel

__all__ = ["OmitAtDefault", "omit_defaults"]


@dataclass(frozen=True)
class OmitAtDefault:
    """Field marker: η's content leaves the key out while it holds the field's default."""


def omit_defaults(model: BaseModel, data: dict[str, Any]) -> dict[str, Any]:
    """Delete, in place, the declared keys that hold their default, in ``model`` and every model it holds.

    Args:
        model: the model ``data`` was dumped from.
        data: ``model.model_dump(mode="json")`` (or a dict of the same shape).

    Returns:
        ``data``, for chaining.
    """
    omitted, nested = _plan(type(model))
    for name, default in omitted:
        if name in data and getattr(model, name) == default:
            del data[name]
    for name in nested:
        if name in data:
            _descend(getattr(model, name), data[name])
    return data


def _descend(value: Any, data: Any) -> None:
    if isinstance(value, BaseModel):
        omit_defaults(value, data)
    elif isinstance(value, dict):
        for key, item in value.items():
            _descend(item, data[key])
    elif isinstance(value, list | tuple):
        for item, dumped in zip(value, data, strict=True):
            _descend(item, dumped)


@functools.cache
def _plan(cls: type[BaseModel]) -> tuple[tuple[tuple[str, Any], ...], tuple[str, ...]]:
    """The class's declared fields with their defaults, and the fields that may hold models."""
    omitted = tuple(
        (name, info.get_default(call_default_factory=True))
        for name, info in cls.model_fields.items()
        if any(isinstance(m, OmitAtDefault) for m in info.metadata)
    )
    nested = tuple(name for name, info in cls.model_fields.items() if _holds_models(info.annotation))
    return omitted, nested


def _holds_models(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_holds_models(arg) for arg in get_args(annotation))
