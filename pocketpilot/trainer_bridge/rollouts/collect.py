"""Run G episodes per task and turn them into RL groups.

Each episode gets a fresh sandbox phone (``tasks.prepare`` inside ``evaluation.run_task``);
``workers`` episode loops run side by side, each taking the next ``(task, index)`` job from a
shared queue. In process they share one event loop (useful when the planner waits on a
server); :func:`~.ray_pool.collect_ray` runs the same per-episode function inside Ray actors.
The output is the episodes' traces plus RL groups in the export format
(:func:`pocketpilot.trainer_bridge.export_rl.rl_groups`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...contracts import Episode
from ...errors import UsageError
from ...evaluation.compare import TaskOutcome, run_task
from ...tasks import TaskSpec
from ..export_rl import RlGroup, rl_groups
from .planners import PlannerFactory

__all__ = [
    "EpisodeResult",
    "RolloutReport",
    "collect_local",
    "collect_rollouts",
    "episode_jobs",
    "group_results",
    "run_episode",
    "summary",
    "write_groups",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodeResult:
    """One finished rollout."""

    task_id: str
    index: int
    episode: Episode
    outcome: TaskOutcome
    trace: Path | None
    worker: str


@dataclass(frozen=True)
class RolloutReport:
    """Everything a rollout run produced."""

    results: list[EpisodeResult]
    groups: list[RlGroup]
    backend: str
    workers: int
    wall_s: float

    @property
    def episodes_per_s(self) -> float:
        """Throughput over the whole run (setup included)."""
        return len(self.results) / self.wall_s if self.wall_s > 0 else 0.0


def episode_jobs(tasks: Sequence[TaskSpec], group_size: int) -> list[tuple[TaskSpec, int]]:
    """One job per task and group member; UsageError for an empty set or a group under one."""
    if group_size < 1:
        raise UsageError("--group-size must be at least 1")
    if not tasks:
        raise UsageError("no tasks to roll out")
    return [(task, i) for task in tasks for i in range(group_size)]


async def run_episode(
    task: TaskSpec, index: int, factory: PlannerFactory, trace_dir: Path | None, worker: str = "local"
) -> EpisodeResult:
    """One rollout on a fresh phone; the trace goes to ``trace_dir``."""
    planner = factory(task, index)
    episode, outcome = await run_task(task, planner, trace_dir=trace_dir)
    return EpisodeResult(task.id, index, episode, outcome, Path(outcome.trace) if outcome.trace else None, worker)


def group_results(results: Sequence[EpisodeResult], group_size: int) -> list[RlGroup]:
    """RL groups of exactly ``group_size`` rollouts per task, rollouts in index order."""
    ordered = sorted(results, key=lambda r: (r.task_id, r.index))
    return rl_groups([r.episode for r in ordered], group_size=group_size, min_size=1)


async def collect_local(
    tasks: Sequence[TaskSpec],
    group_size: int,
    factory: PlannerFactory,
    *,
    workers: int = 1,
    trace_dir: Path | None = None,
) -> RolloutReport:
    """Collect in this process with ``workers`` concurrent episode loops."""
    jobs = episode_jobs(tasks, group_size)
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    queue: asyncio.Queue[tuple[TaskSpec, int]] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    results: list[EpisodeResult] = []

    async def loop(name: str) -> None:
        while True:
            try:
                task, index = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            results.append(await run_episode(task, index, factory, trace_dir, name))

    t0 = time.monotonic()
    try:
        async with asyncio.TaskGroup() as tg:
            for w in range(min(workers, len(jobs))):
                tg.create_task(loop(f"local-{w}"))
    finally:
        await factory.aclose()
    wall = time.monotonic() - t0
    return RolloutReport(results, group_results(results, group_size), "local", workers, wall)


def collect_rollouts(
    tasks: Sequence[TaskSpec],
    group_size: int,
    factory: PlannerFactory,
    *,
    workers: int = 1,
    trace_dir: Path | None = None,
    use_ray: bool = False,
    ray_address: str | None = None,
) -> RolloutReport:
    """Blocking entry point for the CLI and scripts: local or Ray, same output."""
    if use_ray:
        from .ray_pool import collect_ray

        return collect_ray(tasks, group_size, factory, workers=workers, trace_dir=trace_dir, address=ray_address)
    return asyncio.run(collect_local(tasks, group_size, factory, workers=workers, trace_dir=trace_dir))


def write_groups(groups: Sequence[RlGroup], path: str | os.PathLike[str]) -> Path:
    """Write RL groups as JSONL (one group a line), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w") as fh:
        for g in groups:
            fh.write(json.dumps(g.row(), separators=(",", ":")) + "\n")
    os.replace(tmp, path)
    return path


def summary(report: RolloutReport) -> dict[str, Any]:
    """Per-task success rates and throughput, for the CLI."""
    return {
        "backend": report.backend,
        "workers": report.workers,
        "episodes": len(report.results),
        "wall_s": round(report.wall_s, 3),
        "episodes_per_s": round(report.episodes_per_s, 3),
        "groups": [{"task_id": g.task_id, "size": g.size, "success_rate": g.success_rate} for g in report.groups],
    }
