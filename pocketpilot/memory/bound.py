"""``BoundMemory``: a store bound to one caller for one run, async (implements ``harness.base.MemoryStore``).

What a harness :class:`~pocketpilot.harness.Session` is given as its memory: the owner's
private store (and, optionally, the shared one), bound to the caller that proves who is asking
and to the id of the run it serves. Not the session's working memory or its chat history: every
read and write goes to the persistent store, through its access checks and verification.

It runs every blocking store call on a worker thread, and never orphans that thread: if the
awaiting task is cancelled, it waits for the thread to finish (a SQLite transaction cannot be
interrupted half-way) and then re-raises. Retrieved items are tagged as recalled in this run,
so a later capture of the same context is not mistaken for new evidence.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from ..contracts import Episode, RetrievedMemory
from .access import Caller
from .episodes import episode_candidates
from .models import MemoryCandidate, Provenance, SearchFilters, SearchHit
from .store import SEARCH_TIERS, SqliteMemory

__all__ = ["BoundMemory", "run_off_loop"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

_PROVENANCE_KEYS = {"source", "session_id", "step", "observed_at", "trust", "evidence"}


async def run_off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn`` in a worker thread; on cancellation wait for it, then re-raise."""
    fut = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        await asyncio.wait({fut})
        raise


class BoundMemory:
    """A private store, plus optionally the shared one, bound to one caller and one run's id."""

    def __init__(
        self,
        store: SqliteMemory,
        caller: Caller,
        session_id: str,
        *,
        shared: SqliteMemory | None = None,
        shared_caller: Caller | None = None,
    ) -> None:
        """Bind a store to a caller and to the run it serves.

        Args:
            store: The user's private store.
            caller: Who is asking (usually ``Caller.service(token, acting_for=user)``).
            session_id: The harness session's id; recorded in provenance and used for recall tags.
            shared: The shared agent-experience store, searched alongside (read-only here).
            shared_caller: Caller for the shared store (default: ``caller``).
        """
        self.store = store
        self.caller = caller
        self.session_id = session_id
        self.shared = shared
        self.shared_caller = shared_caller or caller

    @property
    def keyword_only(self) -> bool:
        """True when retrieval runs on BM25 alone (no embedder)."""
        return self.store.keyword_only

    @property
    def retrieval(self) -> str:
        """How this memory searches, as the trace header records it."""
        embedder = self.store.embedder
        return "keyword-only" if embedder is None else f"hybrid ({embedder.name})"

    async def search(self, query: str, *, tier: str | None = None, k: int = 5) -> list[RetrievedMemory]:
        """Hybrid retrieval for the bound caller; results are evidence, never instructions."""
        return await run_off_loop(self._search_sync, query, tier, k)

    def _search_sync(self, query: str, tier: str | None, k: int) -> list[RetrievedMemory]:
        filters = SearchFilters(tiers=(tier,) if tier else None)  # type: ignore[arg-type]
        hits: list[tuple[SearchHit, SqliteMemory, Caller]] = [
            (h, self.store, self.caller) for h in self.store.search(self.caller, query, k=k, filters=filters)
        ]
        if self.shared is not None:
            hits += [
                (h, self.shared, self.shared_caller)
                for h in self.shared.search(self.shared_caller, query, k=k, filters=filters)
            ]
            hits.sort(key=lambda x: x[0].score, reverse=True)
            hits = hits[:k]
        by_store: dict[int, tuple[SqliteMemory, Caller, list[str]]] = {}
        for hit, store, caller in hits:
            by_store.setdefault(id(store), (store, caller, []))[2].append(hit.item.id)
        for store, caller, ids in by_store.values():
            store.mark_recalled(caller, self.session_id, ids)
        return [
            RetrievedMemory(
                id=h.item.id,
                tier=h.item.tier,
                content=h.item.content,
                score=h.score,
                provenance={**h.provenance_dict(), "store": "shared" if s is self.shared else "private"},
            )
            for h, s, _ in hits
        ]

    @property
    def owner(self) -> str | None:
        """Whose memories this view reads (the bound caller's subject)."""
        return self.caller.subject

    @property
    def searches_shared(self) -> bool:
        """Whether a search reads the shared store too (what listing the owner's history leaves out)."""
        return self.shared is not None

    async def owner_memories(self, *, limit: int) -> list[RetrievedMemory]:
        """The owner's live memories in the private store, newest first, at most ``limit``.

        What a session places whole in its context when the history is short; the shared
        store is left out (it is agent experience, not the owner's history). Read as the
        bound caller, so the store's access checks apply as for a search.
        """
        return await run_off_loop(self._owner_memories_sync, limit)

    def _owner_memories_sync(self, limit: int) -> list[RetrievedMemory]:
        items = self.store.list_items(self.caller, status="active", limit=max(1, int(limit)))
        return [
            RetrievedMemory(
                id=i.id, tier=i.tier, content=i.content, score=0.0,
                provenance={**SearchHit(item=i, score=0.0, scores={}, keyword_only=False).provenance_dict(),
                            "store": "private"},
            )
            for i in items
            if i.tier in SEARCH_TIERS
        ]

    async def mark_recalled(self, ids: Sequence[str]) -> None:
        """Tag the private store's items ``ids`` as recalled in this session."""
        if ids:
            await run_off_loop(self.store.mark_recalled, self.caller, self.session_id, list(ids))

    async def write(
        self, content: str, *, tier: str, category: str | None, provenance: dict[str, Any]
    ) -> str:
        """Capture a candidate from the planner through verification; returns its id.

        The planner's own write is an ``inference`` unless the provenance says otherwise;
        conflicts and low-trust candidates land in the review tier (the id is still returned).
        """
        prov = {k: v for k, v in (provenance or {}).items() if k in _PROVENANCE_KEYS}
        extra = {k: v for k, v in (provenance or {}).items() if k not in _PROVENANCE_KEYS}
        prov.setdefault("source", "inference")
        prov.setdefault("session_id", self.session_id)
        if "evidence" not in prov:
            step = prov.get("step")
            prov["evidence"] = f"session:{self.session_id}" + (f"/step:{step}" if step is not None else "")
        if extra:
            logger.debug("provenance keys not recorded as fields: %s", sorted(extra))
        if isinstance(prov.get("observed_at"), str):
            prov["observed_at"] = datetime.fromisoformat(prov["observed_at"])
        candidate = MemoryCandidate(
            content=content, tier=tier, category=category, provenance=Provenance(**prov)  # type: ignore[arg-type]
        )
        result = await run_off_loop(self.store.write, self.caller, candidate)
        if result.in_review:
            logger.warning("memory write %s went to REVIEW (not searchable by default): %s", result.id, result.reason)
        return result.id

    async def capture_episode(self, episode: Episode) -> list[str]:
        """Capture a finished episode into episodic memory; returns the ids of new items."""
        candidates = episode_candidates(episode, self.session_id)
        recalled = {m.content for step in episode.steps for m in step.retrieved}
        candidates = [c for c in candidates if c.content not in recalled]
        results = await run_off_loop(self.store.write_many, self.caller, candidates)
        return [r.id for r in results if r.status in ("active", "candidate")]
