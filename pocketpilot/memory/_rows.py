"""Mapping between ``items`` rows and :class:`~.models.MemoryItem`, and content validation."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

from .errors import MemoryContentError
from .models import MAX_CONTENT_CHARS, MemoryItem, Provenance

__all__ = ["COLUMNS", "check_content", "content_hash", "epoch", "from_epoch", "row_to_item"]

COLUMNS = (
    "rid, id, owner, tier, proposed_tier, category, key, content, status, importance, trust, source, "
    "session_id, step, observed_at, evidence, created_at, state, due_at, due_condition, supersedes, "
    "superseded_by, conflicts_with, review_reason, consolidated_into, recall_count, has_vector"
)
_BINARY = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def epoch(value: datetime) -> float:
    """Epoch seconds of an aware datetime (naive means UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


def from_epoch(value: float | None) -> datetime | None:
    """Aware UTC datetime from epoch seconds."""
    return None if value is None else datetime.fromtimestamp(value, tz=UTC)


def check_content(content: object, *, what: str = "content", limit: int = MAX_CONTENT_CHARS) -> str:
    """Return ``content`` stripped, or raise MemoryContentError for empty/oversized/binary input."""
    if isinstance(content, (bytes, bytearray, memoryview)):
        raise MemoryContentError(f"{what} is binary ({type(content).__name__}); memories are text")
    if not isinstance(content, str):
        raise MemoryContentError(f"{what} must be str, not {type(content).__name__}")
    text = unicodedata.normalize("NFC", content).strip()
    if not text:
        raise MemoryContentError(f"{what} is empty")
    if len(text) > limit:
        raise MemoryContentError(f"{what} is {len(text)} characters; the limit is {limit}")
    if _BINARY.search(text):
        raise MemoryContentError(f"{what} contains control characters (binary data?)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MemoryContentError(f"{what} is not valid Unicode text: {exc.reason}") from exc
    return text


def content_hash(text: str) -> str:
    """Hash of the whitespace- and case-normalised content (what counts as "the same")."""
    norm = " ".join(text.lower().split())
    return hashlib.sha256(norm.encode()).hexdigest()[:32]


def row_to_item(row: Any) -> MemoryItem:
    """Build a MemoryItem from a row selected with :data:`COLUMNS`."""
    (
        _rid, id_, owner, tier, proposed, category, key, content, status, importance, trust, source,
        session_id, step, observed_at, evidence, created_at, state, due_at, due_condition, supersedes,
        superseded_by, conflicts_with, review_reason, consolidated_into, recall_count, has_vector,
    ) = row
    prov = Provenance(
        source=source,
        session_id=session_id,
        step=step,
        observed_at=from_epoch(observed_at),
        trust=trust,
        evidence=evidence,
    )
    return MemoryItem(
        id=id_,
        owner=owner,
        tier=tier,
        category=category,
        key=key,
        content=content,
        status=status,
        importance=importance,
        trust=trust,
        provenance=prov,
        created_at=from_epoch(created_at) or datetime.now(UTC),
        state=state,
        due_at=from_epoch(due_at),
        due_condition=due_condition,
        supersedes=supersedes,
        superseded_by=superseded_by,
        conflicts_with=conflicts_with,
        review_reason=review_reason if tier == "review" else None,
        proposed_tier=proposed if tier == "review" else None,
        consolidated_into=consolidated_into,
        recall_count=recall_count,
        has_vector=bool(has_vector),
    )
