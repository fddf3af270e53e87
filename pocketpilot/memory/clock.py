"""The clock a memory store stamps and judges by: the wall clock, or a stepped one for an episode's store.

A store records when each memory was written (``created_at``) and a search shows it to the
planner as the memory's time. On the wall clock, two runs of the same task show different
times, so their prompts differ. A store made for one episode of a task reads a
:class:`SteppedClock` instead: it starts at a time fixed by the task (its world's clock) and
moves on by a step at each reading, so writes keep their order and two runs see the same times.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["Clock", "SteppedClock"]

Clock = Callable[[], float]
"""Epoch seconds now (``time.time`` is one)."""


class SteppedClock:
    """Reads ``start``, then ``start`` plus one step more at each reading (thread-safe)."""

    def __init__(self, start: datetime, step_s: float = 0.001) -> None:
        """Start at ``start`` (naive means UTC); each reading is ``step_s`` seconds after the one before."""
        self.start = (start if start.tzinfo is not None else start.replace(tzinfo=UTC)).timestamp()
        self.step_s = step_s
        self._readings = itertools.count()  # next() on it is atomic: no lock for worker threads

    def __call__(self) -> float:
        """Epoch seconds of this reading (each one a step after the one before)."""
        return self.start + next(self._readings) * self.step_s

    def __repr__(self) -> str:
        return f"SteppedClock({datetime.fromtimestamp(self.start, tz=UTC).isoformat()}, step_s={self.step_s})"
