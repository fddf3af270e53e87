"""Verification: when a candidate becomes authoritative, supersedes, or waits for review.

Runs without an LLM. A candidate passes four checks in order — provenance, trust,
freshness, conflict — and the first that fails sends it to the review tier with a reason.
A conflict is another active item of the same owner with the same *key* (the slot a fact
fills, e.g. ``sister's birthday``) but different content. New evidence that is at least as
trusted and at least as recent supersedes the old item explicitly; anything weaker waits for
a decision. Nothing is silently overwritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from .models import MemoryCandidate, SourceKind

__all__ = ["DEFAULT_TRUST", "ExistingFact", "VerifyDecision", "VerifyPolicy", "VerifyRules", "infer_key", "verify"]

DEFAULT_TRUST: dict[SourceKind, float] = {
    "user_statement": 0.9,
    "tool_result": 0.8,
    "consolidation": 0.7,
    "episode": 0.6,
    "inference": 0.5,
}
"""What each source kind is worth when the writer gives no explicit trust."""

_KEYED_TIERS = frozenset({"user", "long_term"})
"""Tiers of facts that can contradict each other; episodes are events and never conflict."""


@dataclass(frozen=True)
class VerifyRules:
    """The thresholds and allowed sources the verification checks apply.

    Data a store is opened with, not a harness policy: it acts on a candidate memory when it is
    written, never on a run's steps.
    """

    min_trust: dict[str, float] = field(
        default_factory=lambda: {"user": 0.8, "long_term": 0.6, "episodic": 0.3, "prospective": 0.5}
    )
    max_age: timedelta = timedelta(days=365)
    """Evidence older than the owner's newest event by more than this is stale: it may not
    become authoritative unreviewed."""
    future_skew: timedelta = timedelta(minutes=5)
    user_tier_sources: frozenset[str] = frozenset({"user_statement", "tool_result", "consolidation"})
    """Sources allowed to write the user model directly (an inference about the user is reviewed)."""


VerifyPolicy = VerifyRules
"""Deprecated alias of :class:`VerifyRules` (its old name read as one of the harness's policies)."""


@dataclass(frozen=True)
class ExistingFact:
    """An active item that shares the candidate's key or content."""

    id: str
    content_hash: str
    trust: float
    observed_at: datetime


@dataclass(frozen=True)
class VerifyDecision:
    """What to do with a candidate."""

    action: Literal["accept", "review", "supersede", "duplicate"]
    reason: str = ""
    target: str | None = None
    """The existing item superseded, conflicted with, or duplicated."""


_KEY_PATTERNS = (
    re.compile(r"^\s*(?:my|the user'?s?|user'?s)\s+(?P<key>[\w' -]{2,60}?)\s+(?:is|are|was|=)\s+\S", re.I),
    re.compile(r"^\s*(?P<key>[\w' -]{2,40}?)\s*[:=]\s*\S", re.I),
)


def infer_key(content: str) -> str | None:
    """Guess the slot a fact fills from ``my X is Y`` / ``X: Y`` phrasing (lower-cased), else None."""
    for pattern in _KEY_PATTERNS:
        m = pattern.match(content)
        if m:
            return " ".join(m.group("key").lower().split())
    return None


def verify(
    candidate: MemoryCandidate,
    *,
    trust: float,
    content_hash: str,
    observed_at: datetime,
    same_key: list[ExistingFact],
    same_content: ExistingFact | None,
    now: datetime,
    rules: VerifyRules,
    newest_event: datetime | None = None,
    check_age: bool = True,
) -> VerifyDecision:
    """Decide a candidate's fate from its provenance and the active items it touches.

    ``now`` (the wall clock) only catches evidence from the future. Staleness is measured
    against ``newest_event``, the owner's newest observation: a memory is stale when the
    owner has moved on since, not because the machine's calendar has. ``check_age=False``
    skips the age check (imported history).
    """
    prov = candidate.provenance
    if same_content is not None:
        return VerifyDecision("duplicate", "same content is already stored", same_content.id)
    if candidate.tier == "review":
        return VerifyDecision("review", "written to the review tier")
    # 1. provenance
    if prov.source == "inference" and not prov.evidence:
        return VerifyDecision("review", "an inference without a pointer to evidence")
    if candidate.tier == "user" and prov.source not in rules.user_tier_sources:
        return VerifyDecision("review", f"{prov.source} may not write the user model directly")
    # 2. trust
    floor = rules.min_trust.get(candidate.tier, 0.0)
    if trust < floor:
        return VerifyDecision("review", f"trust {trust:.2f} below {floor:.2f} for the {candidate.tier} tier")
    # 3. freshness
    if observed_at > now + rules.future_skew:
        return VerifyDecision("review", "evidence observed in the future")
    reference = max(newest_event, observed_at) if newest_event is not None else observed_at
    if check_age and reference - observed_at > rules.max_age:
        return VerifyDecision("review", f"stale evidence: older than the owner's newest event by more than "
                                        f"{rules.max_age.days} days")
    # 4. conflict
    if candidate.tier in _KEYED_TIERS and same_key:
        newest = max(same_key, key=lambda f: f.observed_at)
        if trust >= newest.trust and observed_at >= newest.observed_at:
            return VerifyDecision("supersede", "newer evidence at least as trusted", newest.id)
        return VerifyDecision("review", "conflicts with a more trusted or more recent memory", newest.id)
    return VerifyDecision("accept")
