"""Set a task up for a run: its world, its executor, and a verifier bound to its start state.

Everything a run needs short of a planner and a session, which belong to the harness (this
package never imports it): the CLI's ``run``, the bench and the tests all start here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ..contracts import Episode, ToolSpec, Verdict
from ..errors import UsageError
from ..executor.sandbox import SandboxPhone
from ..ids import SeededIds
from ..memory import Embedder
from ..memory.clock import SteppedClock
from .loader import build_world, check_task, exposed_tools, load_task
from .memory_seed import TaskMemory, open_task_memory
from .spec import TaskSpec
from .verify import verify
from .world import TaskWorld, WorldExecutor, WorldState

__all__ = ["EXPOSURES", "Exposure", "TaskRun", "prepare"]

Exposure = Literal["task", "phone"]
EXPOSURES: tuple[str, ...] = ("task", "phone")
"""``task``: only the apps the task names (the default, for comparison); ``phone``: every app of
the world installed and exposed, nothing said about which ones the task needs."""


@dataclass
class TaskRun:
    """One prepared run of a task.

    Unpacks as ``phone, executor, verifier = prepare(task)``; ``verifier`` is the async
    callable the harness awaits with the finished episode.
    """

    task: TaskSpec
    world: TaskWorld
    executor: WorldExecutor
    initial: WorldState = field(repr=False)
    """Snapshot of the start state (the phone's ``PhoneState`` for a sandbox task); the verifier
    diffs the world's final state against it."""
    memory: TaskMemory | None = None
    """The task's seeded memory store, when prepared with ``memory=True`` (close it with :meth:`close`)."""

    @property
    def phone(self) -> SandboxPhone | None:
        """The sandbox phone, when the task's world keeps it."""
        sandbox = self.world.sandbox
        return sandbox.phone if sandbox is not None else None

    @property
    def clock(self) -> datetime | None:
        """The world's clock (the phone's, or the task state's own ``now``), if it has one."""
        return self.world.clock()

    def specs(self) -> dict[str, ToolSpec]:
        """Every tool of the world by name, exposed or not: the verifier reads their semantics."""
        return self.world.specs()

    def close(self) -> None:
        """Release the memory store, if any."""
        if self.memory is not None:
            self.memory.close()

    async def verifier(self, episode: Episode) -> Verdict:
        """Judge ``episode`` on the world's current (final) state."""
        return verify(self.task, self.initial, self.world.snapshot(), episode, tools=self.world.specs())

    def __iter__(self) -> Iterator[Any]:
        return iter((self.phone, self.executor, self.verifier))


def prepare(task: TaskSpec | str | Path, *, memory: bool = False, embedder: Embedder | None = None,
            exposure: Exposure = "task", seed: str | None = None) -> TaskRun:
    """Build the task's world and executor (the task's tools exposed, or the whole phone's) and its verifier.

    Args:
        task: A spec, or a path to a task file.
        memory: Also open a fresh in-memory store seeded with the task's memories.
        embedder: The store's vector backend (None: keyword-only retrieval).
        exposure: ``task`` (only the apps the task names) or ``phone`` (every tool of its world).
        seed: Make the memory store repeatable: its ids derive from ``seed``
            (:class:`~pocketpilot.ids.SeededIds`) and it stamps memories on a
            :class:`~pocketpilot.memory.clock.SteppedClock` from the world's clock, so two runs
            of the task show the planner the same ids and times (None: random ids, the wall
            clock). The store is made for this run alone, which is what makes repeating safe.

    Raises:
        TaskSpecError: if the task is invalid (a WorldError if its own world does not build).
        UsageError: an unknown exposure.
    """
    if exposure not in EXPOSURES:
        raise UsageError(f"unknown exposure {exposure!r}; use one of: {', '.join(EXPOSURES)}")
    spec = task if isinstance(task, TaskSpec) else load_task(task)
    if isinstance(task, TaskSpec):
        check_task(spec)
    world = build_world(spec)
    executor = world.executor(world.tool_names() if exposure == "phone" else exposed_tools(spec, world))
    repeatable = {} if seed is None else {"ids": SeededIds(seed).derive("memory"), "clock": _store_clock(spec, world)}
    seeded = open_task_memory(spec, embedder=embedder, **repeatable) if memory else None
    return TaskRun(task=spec, world=world, executor=executor, initial=world.snapshot(), memory=seeded)


_NO_CLOCK = datetime(2025, 1, 1, tzinfo=UTC)
"""Where a repeatable store's clock starts for a task whose world has no clock and no memories."""


def _store_clock(spec: TaskSpec, world: TaskWorld) -> SteppedClock:
    """A repeatable store's clock: from the world's time, or its newest seed's when that is later.

    Verification sends evidence from the future to review, so the clock never starts before
    the newest seed; the wall clock never enters.
    """
    times = [t for t in (world.clock(), *(s.created_at for s in spec.memory)) if t is not None]
    return SteppedClock(max((t if t.tzinfo is not None else t.replace(tzinfo=UTC) for t in times), default=_NO_CLOCK))
