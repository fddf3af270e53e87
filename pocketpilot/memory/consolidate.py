"""Consolidation: episodic → long-term, by deduplicating and merging, without an LLM.

Active episodic items not yet consolidated are clustered greedily (cosine on stored vectors
when the store has them, word Jaccard otherwise). A cluster seen at least ``min_group``
times is a recurring fact: it becomes one long-term item (wording of its freshest member,
importance raised with repetition, provenance pointing at every member), or, if a long-term
item already says the same, the members are linked to that one. The write goes through
verification, so a consolidated fact that contradicts an older long-term fact supersedes it
explicitly or waits in review. An LLM summariser can be plugged in as a :class:`Consolidator`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .access import Caller
from .models import MemoryCandidate, MemoryItem, Provenance
from .store import SqliteMemory

__all__ = ["ConsolidationReport", "Consolidator", "consolidate", "run_periodically"]

logger = logging.getLogger(__name__)
_WORD = re.compile(r"\w+")


class Consolidator(Protocol):
    """Plug-in that writes one long-term statement for a cluster (e.g. an LLM summariser)."""

    def __call__(self, members: Sequence[MemoryItem]) -> str:
        """Return the consolidated content for ``members`` (oldest first)."""
        ...


def latest_wording(members: Sequence[MemoryItem]) -> str:
    """Default consolidator: the freshest member's text (no LLM, no paraphrase)."""
    return members[-1].content


@dataclass
class ConsolidationReport:
    """What a consolidation run did."""

    examined: int = 0
    clusters: int = 0
    created: list[str] = field(default_factory=list)
    merged_into_existing: list[str] = field(default_factory=list)
    to_review: list[str] = field(default_factory=list)


def _similarity_fn(items: Sequence[MemoryItem], vectors: dict[str, np.ndarray]):  # type: ignore[no-untyped-def]
    words = {it.id: frozenset(_WORD.findall(it.content.lower())) for it in items}

    def sim(a: MemoryItem, b: MemoryItem) -> tuple[float, bool]:
        if a.id in vectors and b.id in vectors:
            return float(vectors[a.id] @ vectors[b.id]), True
        x, y = words.get(a.id) or frozenset(_WORD.findall(a.content.lower())), words.get(b.id) or frozenset(
            _WORD.findall(b.content.lower())
        )
        return (len(x & y) / len(x | y) if x and y else 0.0), False

    return sim


def consolidate(
    store: SqliteMemory,
    caller: Caller,
    *,
    min_group: int = 2,
    cosine_threshold: float = 0.9,
    jaccard_threshold: float = 0.7,
    consolidator: Consolidator = latest_wording,
    limit: int = 5000,
) -> ConsolidationReport:
    """Run one consolidation pass over the caller's episodic memory (idempotent)."""
    report = ConsolidationReport()
    episodic = [
        it for it in reversed(store.list_items(caller, tier="episodic", status="active", limit=limit))
        if it.consolidated_into is None
    ]
    long_term = store.list_items(caller, tier="long_term", status="active", limit=limit)
    report.examined = len(episodic)
    if not episodic:
        return report
    vectors = store.item_vectors(caller, [it.id for it in episodic + long_term])
    sim = _similarity_fn(episodic + long_term, vectors)

    def close(a: MemoryItem, b: MemoryItem) -> bool:
        value, cosine = sim(a, b)
        return value >= (cosine_threshold if cosine else jaccard_threshold)

    clusters: list[list[MemoryItem]] = []
    for item in episodic:  # oldest first
        for cluster in clusters:
            if close(cluster[0], item):
                cluster.append(item)
                break
        else:
            clusters.append([item])
    for members in clusters:
        if len(members) < min_group:
            continue
        report.clusters += 1
        ids = [m.id for m in members]
        existing = next((lt for lt in long_term if close(lt, members[-1])), None)
        if existing is not None:
            store.link_consolidated(caller, ids, existing.id)
            report.merged_into_existing.append(existing.id)
            continue
        candidate = MemoryCandidate(
            content=consolidator(members),
            tier="long_term",
            category=members[-1].category,
            importance=min(1.0, max(m.importance for m in members) + 0.1 * (len(members) - 1)),
            provenance=Provenance(
                source="consolidation",
                observed_at=members[-1].provenance.observed_at,
                evidence=("consolidated:" + ",".join(ids))[:2000],
            ),
        )
        result = store.write(caller, candidate)
        store.link_consolidated(caller, ids, result.id)
        if result.status == "candidate":
            report.to_review.append(result.id)
        elif result.status == "duplicate":
            report.merged_into_existing.append(result.id)
        else:
            report.created.append(result.id)
    logger.info("consolidation: %s", report)
    return report


async def run_periodically(
    store: SqliteMemory, caller: Caller, interval_s: float, stop: asyncio.Event
) -> None:
    """Consolidate every ``interval_s`` seconds until ``stop`` is set (off the event loop)."""
    from .bound import run_off_loop

    while not stop.is_set():
        await run_off_loop(consolidate, store, caller)
        try:
            async with asyncio.timeout(interval_s):  # not wait_for: it can drop a cancellation
                await stop.wait()
        except TimeoutError:
            continue
