"""The memory protocols a session depends on; :class:`~pocketpilot.memory.MemorySession` implements them.

They live with memory, not the harness, so other stores (an app's own, a remote one) plug in
by implementing these and import nothing from the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..contracts import Episode, RetrievedMemory

__all__ = ["DescribesRetrieval", "ListsMemories", "MemoryStore", "SearchesShared"]


@runtime_checkable
class MemoryStore(Protocol):
    """What the harness needs from memory: search, write a candidate, capture an episode."""

    async def search(
        self, query: str, *, tier: str | None = None, k: int = 5
    ) -> list[RetrievedMemory]:
        """Hybrid retrieval for the session's caller; results are evidence only."""
        ...

    async def write(
        self, content: str, *, tier: str, category: str | None, provenance: dict[str, Any]
    ) -> str:
        """Capture a candidate from the planner; returns its id."""
        ...

    async def capture_episode(self, episode: Episode) -> list[str]:
        """Capture a finished episode into episodic memory; returns the new ids."""
        ...


@runtime_checkable
class DescribesRetrieval(Protocol):
    """A memory that can say how it retrieves, for the trace header (hybrid or keyword-only)."""

    @property
    def retrieval(self) -> str:
        """``hybrid (<embedder name>)`` or ``keyword-only``."""
        ...


@runtime_checkable
class ListsMemories(Protocol):
    """A memory that can list its owner's live memories, so a short history can go in whole.

    Optional: a session whose memory only searches retrieves instead.
    """

    @property
    def owner(self) -> str | None:
        """Whose memories these are (None: not known)."""
        ...

    async def owner_memories(self, *, limit: int) -> list[RetrievedMemory]:
        """The owner's live memories, at most ``limit``, each with its provenance.

        None of another owner's, none of a shared store's.
        """
        ...

    async def mark_recalled(self, ids: Sequence[str]) -> None:
        """Tag memories as shown in this session, so capturing the run does not store them again."""
        ...


@runtime_checkable
class SearchesShared(Protocol):
    """A memory whose search may also return a shared store's records, beside the owner's own.

    Optional: a memory that does not say so searches its owner's records alone. Recall reads it
    to tell whether a listed history is all a search could find: the listing leaves the shared
    store out (:meth:`ListsMemories.owner_memories`), a search does not.
    """

    @property
    def searches_shared(self) -> bool:
        """True when a shared store is searched alongside the owner's."""
        ...
