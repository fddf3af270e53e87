"""Set a task up for a run: its phone, its executor, and a verifier bound to its start state."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contracts import Episode, Verdict
from ..executor.sandbox import PhoneState, SandboxExecutor, SandboxPhone
from ..memory import Embedder
from .loader import build_state, check_task, exposed_tools, load_task
from .memory_seed import TaskMemory, open_task_memory
from .spec import TaskSpec
from .verify import verify

__all__ = ["TaskRun", "prepare"]


@dataclass
class TaskRun:
    """One prepared run of a task.

    Unpacks as ``phone, executor, verifier = prepare(task)``; ``verifier`` is the async
    callable the harness awaits with the finished episode.
    """

    task: TaskSpec
    phone: SandboxPhone
    executor: SandboxExecutor
    initial: PhoneState = field(repr=False)
    """Snapshot of the start state; the verifier diffs the phone's final state against it."""
    memory: TaskMemory | None = None
    """The task's seeded memory store, when prepared with ``memory=True`` (close it with :meth:`close`)."""

    def close(self) -> None:
        """Release the memory store, if any."""
        if self.memory is not None:
            self.memory.close()

    async def verifier(self, episode: Episode) -> Verdict:
        """Judge ``episode`` on the phone's current (final) state."""
        return verify(self.task, self.initial, self.phone.snapshot(), episode)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.phone, self.executor, self.verifier))


def prepare(task: TaskSpec | str | Path, *, memory: bool = False, embedder: Embedder | None = None) -> TaskRun:
    """Build the task's phone and executor (only the task's tools exposed) and its verifier.

    Args:
        task: A spec, or a path to a task file.
        memory: Also open a fresh in-memory store seeded with the task's memories.
        embedder: The store's vector backend (None: keyword-only retrieval).

    Raises:
        TaskSpecError: if the task is invalid.
    """
    spec = task if isinstance(task, TaskSpec) else load_task(task)
    if isinstance(task, TaskSpec):
        check_task(spec)
    phone = SandboxPhone(build_state(spec))
    executor = SandboxExecutor(phone, exposed_tools(spec))
    seeded = open_task_memory(spec, embedder=embedder) if memory else None
    return TaskRun(task=spec, phone=phone, executor=executor, initial=phone.snapshot(), memory=seeded)
