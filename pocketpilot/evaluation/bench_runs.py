"""The bench at suite size: shards, resumable runs, and Ray as a backend.

A 1,000-task suite is run in pieces. ``--shard i/n`` keeps the tasks whose id hashes to ``i``
modulo ``n``: the partition is fixed by the ids alone, so a task stays in its shard when others
are added or the selection order changes, and the ``n`` shards together hold every task exactly
once. A run writes each finished outcome to ``outcomes.jsonl`` in its trace folder as it
finishes; ``--resume`` reads it back and runs only what is missing, so a run killed at task 700
costs the 300 left, not 1,000.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from ..errors import BackendUnavailableError, UsageError
from .compare import TaskOutcome

__all__ = ["OUTCOME_LOG", "OutcomeLog", "parse_shard", "run_ray_outcomes", "shard_of", "shard_tasks", "still_valid"]

logger = logging.getLogger(__name__)

OUTCOME_LOG = "outcomes.jsonl"
T = TypeVar("T")


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` → ``(i, n)`` with ``0 <= i < n``.

    Raises:
        UsageError: anything else.
    """
    head, _, tail = text.partition("/")
    try:
        index, count = int(head), int(tail)
    except ValueError as exc:
        raise UsageError(f"--shard takes i/n (e.g. 0/4), got {text!r}") from exc
    if count < 1 or not 0 <= index < count:
        raise UsageError(f"--shard {text}: need 0 <= i < n")
    return index, count


def shard_of(task_id: str, count: int) -> int:
    """The shard a task id belongs to among ``count`` (stable across runs, machines and Python versions)."""
    return int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "big") % count


def shard_tasks(tasks: Sequence[T], index: int, count: int) -> list[T]:
    """The tasks of shard ``index`` of ``count``, in their given order."""
    return [t for t in tasks if shard_of(getattr(t, "id"), count) == index]  # noqa: B009


class OutcomeLog:
    """Finished outcomes of a bench run, one JSON line each, appended as they finish."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / OUTCOME_LOG

    def load(self) -> dict[tuple[str, str], TaskOutcome]:
        """Outcomes already recorded, by ``(task_id, mode)``; a torn last line (a killed run) is ignored."""
        done: dict[tuple[str, str], TaskOutcome] = {}
        if not self.path.exists():
            return done
        for n, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                outcome = TaskOutcome.model_validate_json(line)
            except ValidationError:
                logger.warning("%s:%d: not an outcome (a run killed mid-write?); that task runs again", self.path, n)
                continue
            done[(outcome.task_id, outcome.mode)] = outcome
        return done

    def append(self, outcome: TaskOutcome) -> None:
        """Record one finished outcome (flushed at once, so a kill loses at most the task in flight)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(outcome.model_dump_json() + "\n")
            fh.flush()


def still_valid(done: dict[tuple[str, str], TaskOutcome], tasks: Sequence[Any],
                modes: Sequence[str]) -> dict[tuple[str, str], TaskOutcome]:
    """The recorded outcomes a resumed run may keep: of a selected task and mode, and of the task
    as it is now. A task edited or regenerated since it ran (same id, other content) runs again,
    so one report never mixes two versions of a task. An outcome from a log older than the
    recorded digest is kept: nothing says it differs.
    """
    current = {t.id: t.digest() for t in tasks}
    kept: dict[tuple[str, str], TaskOutcome] = {}
    for (task_id, mode), outcome in done.items():
        if mode not in modes or task_id not in current:
            continue
        if outcome.task_digest and outcome.task_digest != current[task_id]:
            logger.info("%s (%s) changed since it ran: it runs again", task_id, mode)
            continue
        kept[(task_id, mode)] = outcome
    return kept


def run_ray_outcomes(tasks: Sequence[Any], factory: Any, *, workers: int = 2, trace_dir: Path | None = None,
                     address: str | None = None) -> list[TaskOutcome]:
    """One harness-mode episode per task on Ray actors (the rollout pool), outcomes in task order.

    Raises:
        BackendUnavailableError: ray is not installed.
    """
    from ..trainer_bridge.rollouts.ray_pool import collect_ray, ray_available

    if not ray_available():
        raise BackendUnavailableError("ray", "pip install 'pocketpilot[ray]'")
    report = collect_ray(list(tasks), 1, factory, workers=workers, trace_dir=trace_dir, address=address)
    by_id = {r.task_id: r.outcome for r in report.results}
    return [by_id[t.id] for t in tasks]

