"""Pydantic models at the memory boundary: tiers, provenance, candidates, items and hits."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "MAX_CONTENT_CHARS",
    "TIERS",
    "MemoryCandidate",
    "MemoryItem",
    "Provenance",
    "SearchFilters",
    "SearchHit",
    "SourceKind",
    "Status",
    "Tier",
    "WriteResult",
]

Tier = Literal["user", "episodic", "long_term", "prospective", "review"]
TIERS: tuple[str, ...] = ("user", "episodic", "long_term", "prospective", "review")

SourceKind = Literal["user_statement", "tool_result", "inference", "episode", "consolidation"]
"""Where a memory came from; the default trust of each is in :mod:`.verify`."""

Status = Literal["active", "superseded", "candidate", "rejected"]
"""``candidate`` items wait in the review tier; ``superseded`` ones stay as history."""

ProspectiveState = Literal["pending", "done", "cancelled"]

MAX_CONTENT_CHARS = 4000
"""Longest memory content accepted; longer text belongs in evidence, not in a memory."""


def _utc(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Provenance(_Model):
    """Where a memory came from: source kind, session, step, time, trust and raw evidence."""

    source: SourceKind
    session_id: str | None = Field(default=None, max_length=200)
    step: int | None = Field(default=None, ge=0)
    observed_at: datetime | None = None
    """When the evidence was observed (default: write time)."""
    trust: float | None = Field(default=None, ge=0.0, le=1.0)
    """Override of the source kind's default trust."""
    evidence: str | None = Field(default=None, max_length=2000)
    """Pointer to raw evidence: an episode/step reference, a tool call key, item ids."""
    recalled: bool = False
    """The text was shown from memory in a context: not new evidence."""

    _normalize_time = field_validator("observed_at")(_utc)


class MemoryCandidate(_Model):
    """What a writer proposes; :mod:`.verify` decides whether it becomes authoritative."""

    content: str
    tier: Tier = "episodic"
    category: str | None = Field(default=None, max_length=40)
    key: str | None = Field(default=None, max_length=120)
    """Slot the fact fills (``sister's birthday``); two active items with one key conflict.
    Inferred from ``my X is Y`` phrasing when not given."""
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    provenance: Provenance
    due_at: datetime | None = None
    """Prospective tier: when the intent falls due."""
    due_condition: str | None = Field(default=None, max_length=200)
    """Prospective tier: a condition that makes the intent due (free text)."""

    _normalize_time = field_validator("due_at")(_utc)


class MemoryItem(_Model):
    """A stored memory with its provenance, status and supersession links."""

    id: str
    owner: str
    tier: Tier
    category: str | None
    key: str | None
    content: str
    status: Status
    importance: float
    trust: float
    provenance: Provenance
    created_at: datetime
    state: ProspectiveState | None = None
    due_at: datetime | None = None
    due_condition: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    conflicts_with: str | None = None
    review_reason: str | None = None
    proposed_tier: Tier | None = None
    """Review tier: the tier the candidate asked for."""
    consolidated_into: str | None = None
    recall_count: int = 0
    has_vector: bool = False


class WriteResult(_Model):
    """Outcome of a write: the item id and what verification decided."""

    id: str
    status: Literal["active", "candidate", "duplicate", "recalled"]
    """``duplicate``/``recalled``: nothing new was stored; ``id`` names the existing item."""
    tier: Tier
    reason: str = ""
    superseded: str | None = None
    """Id of the item this write superseded, if any."""

    @property
    def in_review(self) -> bool:
        """The write was parked in the review tier: stored, but not searchable by default."""
        return self.tier == "review"


class SearchFilters(_Model):
    """Narrow a search by tier, category and time; superseded history is opt-in."""

    tiers: tuple[Tier, ...] | None = None
    """Default: every tier but review."""
    category: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_superseded: bool = False

    _normalize_since = field_validator("since", "until")(_utc)


class SearchHit(_Model):
    """One retrieved memory with every score that ranked it."""

    item: MemoryItem
    score: float
    scores: dict[str, float]
    """``rrf``, ``bm25_rank``, ``vector_rank``, ``cosine``, ``recency``, ``importance``, ``mmr``."""
    keyword_only: bool
    """True when no embedder was available and only BM25 ranked the results."""

    def provenance_dict(self) -> dict[str, Any]:
        """Provenance plus status and ids, as the planner's evidence shows it."""
        data = self.item.provenance.model_dump(mode="json", exclude_none=True)
        data.update(
            owner=self.item.owner,
            status=self.item.status,
            trust=self.item.trust,
            created_at=self.item.created_at.isoformat(),
            evidence_only=True,
        )
        if self.item.supersedes:
            data["supersedes"] = self.item.supersedes
        if self.keyword_only:
            data["keyword_only"] = True
        return data
