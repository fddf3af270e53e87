"""The owner, her stores and how a memory gets into them, for the standing-wish attacks.

Whether a memory grants anything depends on where it came from (its provenance) and whose store
holds it, so every attack here writes through the real store with a real access policy: the
provenance the guards read is the one the store kept, not one a test made up.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pocketpilot.memory import AccessPolicy, Caller, MemoryCandidate, Provenance, SqliteMemory

SERVICE, ADMIN = "wish-service-token-0123456789", "wish-admin-credential-9876543210"


@contextmanager
def wish_stores(tmp_path: Path) -> Iterator[tuple[SqliteMemory, SqliteMemory]]:
    """The owner's private store and a shared one, under one access policy."""
    policy = AccessPolicy(SERVICE, ADMIN)
    private, shared = SqliteMemory(tmp_path / "mine.db", policy), SqliteMemory(tmp_path / "shared.db", policy)
    try:
        yield private, shared
    finally:
        private.close()
        shared.close()


def alice() -> Caller:
    """The service acting for the owner whose wishes are tested."""
    return Caller.service(SERVICE, acting_for="alice")


def remember(store: SqliteMemory, source: str, content: str, who: str = "alice") -> None:
    """Write ``content`` for ``who`` with the given provenance source, and check the store kept it."""
    written = store.write(Caller.service(SERVICE, acting_for=who),
                          MemoryCandidate(content=content, tier="user", provenance=Provenance(source=source)))  # type: ignore[arg-type]
    assert written.status == "active", written
