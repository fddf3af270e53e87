"""Set a task up for a run: its phone, its executor, and a verifier bound to its start state."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contracts import Episode, Verdict
from ..executor.sandbox import PhoneState, SandboxExecutor, SandboxPhone
from .loader import build_state, check_task, exposed_tools, load_task
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

    async def verifier(self, episode: Episode) -> Verdict:
        """Judge ``episode`` on the phone's current (final) state."""
        return verify(self.task, self.initial, self.phone.snapshot(), episode)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.phone, self.executor, self.verifier))


def prepare(task: TaskSpec | str | Path) -> TaskRun:
    """Build the task's phone and executor (only the task's tools exposed) and its verifier.

    Args:
        task: A spec, or a path to a task file.

    Raises:
        TaskSpecError: if the task is invalid.
    """
    spec = task if isinstance(task, TaskSpec) else load_task(task)
    if isinstance(task, TaskSpec):
        check_task(spec)
    phone = SandboxPhone(build_state(spec))
    executor = SandboxExecutor(phone, exposed_tools(spec))
    return TaskRun(task=spec, phone=phone, executor=executor, initial=phone.snapshot())
