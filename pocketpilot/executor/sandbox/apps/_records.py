"""Record lookup and id issue shared by the apps whose sections hold ``items`` with ids."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

from ....errors import ToolFailure

__all__ = ["Counter", "find", "issue_id", "money"]


class _Record(Protocol):
    id: str


R = TypeVar("R", bound=_Record)


class Counter(Protocol):
    """A state section that numbers its records (``next_id``), as every app's section does."""

    next_id: int


def find(items: Iterable[R], record_id: str, what: str) -> R:
    """The record with ``record_id``; ``not_found`` naming ``what`` and the ids that exist."""
    items = list(items)
    for item in items:
        if item.id == record_id:
            return item
    known = ", ".join(i.id for i in items[:8]) or "none"
    raise ToolFailure("not_found", f"no {what} with id {record_id!r} (known: {known})")


def issue_id(section: Counter, prefix: str) -> str:
    """The next ``<prefix>-<n>`` id of ``section``; ids are never reused, even after a delete."""
    new = f"{prefix}-{section.next_id}"
    section.next_id += 1
    return new


def money(amount: float) -> float:
    """Amounts in a currency's minor unit precision, so sums compare exactly in criteria."""
    return round(amount + 0.0, 2)


