"""Where ids come from: random by default, derived from a seed where a run is an episode of a task.

A memory's id and a sub-agent's episode id reach the planner's prompt (a search shows the
ids it found, a delegation's result names the sub-agent's episode), and the planner copies
them into later actions. Drawn at random, they make two runs of the same task differ in
their prompts, so a greedy rerun cannot repeat itself and the decode memo cannot serve it.
An evaluation run is an episode of a task, on a fresh world and store made for it alone:
there, :class:`SeededIds` derives the ids from the task, and two runs see the same ones.

Everywhere else (a deployment, a user's persistent store) ids stay :class:`RandomIds`. Every
id has today's format whatever its source: 32 lowercase hex digits, a version-4 UUID's, so
nothing that reads ids can tell them apart. A seeded source promises repeatability, not
uniqueness across runs: whoever stores its ids checks them against the ids it holds (the
memory store skips an id it already has or has deleted).
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
from typing import Protocol, runtime_checkable

__all__ = ["IdSource", "RandomIds", "SeededIds", "random_ids"]


@runtime_checkable
class IdSource(Protocol):
    """Mints ids: 32 lowercase hex digits each (a version-4 UUID's ``hex``)."""

    def new_id(self) -> str:
        """The next id."""
        ...


class RandomIds:
    """A fresh ``uuid4`` each time: unique without coordination (the default everywhere)."""

    def new_id(self) -> str:
        """A random version-4 UUID's hex."""
        return uuid.uuid4().hex

    def __repr__(self) -> str:
        return "RandomIds()"


_RANDOM = RandomIds()


def random_ids() -> RandomIds:
    """The shared random source (it holds no state)."""
    return _RANDOM


class SeededIds:
    """The n-th id is a hash of the seed and n, shaped as a version-4 UUID.

    Two sources with the same seed mint the same ids in the same order; a component gets
    its own stream with :meth:`derive`, so one component drawing an extra id does not shift
    another's. Thread-safe: each id takes the next count atomically (a store is written from worker
    threads).
    """

    def __init__(self, seed: str) -> None:
        self.seed = str(seed)
        self._counter = itertools.count()  # next() on it is atomic: no lock for worker threads

    def new_id(self) -> str:
        """The hash of ``seed`` and the next count, as a version-4 UUID's hex."""
        raw = hashlib.sha256(f"{self.seed}\x00{next(self._counter)}".encode()).digest()[:16]
        return uuid.UUID(bytes=raw, version=4).hex

    def derive(self, name: str) -> SeededIds:
        """A fresh source whose stream is this seed's ``name`` part (its counter starts at zero)."""
        return SeededIds(f"{self.seed}/{name}")

    def __repr__(self) -> str:
        return f"SeededIds({self.seed!r})"
