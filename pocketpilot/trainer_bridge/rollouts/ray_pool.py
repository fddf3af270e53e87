"""Rollouts over Ray actors: each actor owns one environment slot and its own planner.

Environment capacity then scales with the Ray cluster, independently of the trainer: add
nodes, raise ``workers``. An actor runs one episode at a time on a fresh sandbox phone and
returns the episode, its outcome and its trace text; the driver writes the traces locally,
so it works when actors live on other machines. Ray is an optional extra (``pocketpilot[ray]``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...contracts import Episode
from ...errors import UsageError
from ...evaluation.compare import TaskOutcome
from ...tasks import TaskSpec
from .collect import EpisodeResult, RolloutReport, episode_jobs, group_results, run_episode
from .planners import PlannerFactory

__all__ = ["RayRolloutPool", "RolloutWorker", "collect_ray", "ray_available"]

logger = logging.getLogger(__name__)


def ray_available() -> bool:
    """True when the optional ``ray`` package is installed."""
    return importlib.util.find_spec("ray") is not None


class RolloutWorker:
    """The actor body (plain class; ``ray.remote`` wraps it in :func:`collect_ray`)."""

    def __init__(self, factory: PlannerFactory, name: str) -> None:
        self.factory, self.name = factory, name
        self._loop = asyncio.new_event_loop()  # one loop per actor, reused across episodes

    def run(self, task: TaskSpec, index: int) -> dict[str, Any]:
        """Run one rollout; returns JSON-able episode, outcome and the trace's text."""
        with tempfile.TemporaryDirectory(prefix="pp-rollout-") as tmp:
            result = self._loop.run_until_complete(run_episode(task, index, self.factory, Path(tmp), self.name))
            trace_text = result.trace.read_text() if result.trace else None
        return {
            "task_id": task.id,
            "index": index,
            "worker": self.name,
            "episode": result.episode.model_dump_json(),
            "outcome": result.outcome.model_dump_json(),
            "trace": trace_text,
        }

    def ping(self) -> str:
        """Readiness probe."""
        return self.name

    def close(self) -> None:
        """Release the factory's model and the actor's event loop."""
        try:
            self._loop.run_until_complete(self.factory.aclose())
        finally:
            self._loop.close()


def _receive(item: dict[str, Any], trace_dir: Path | None) -> EpisodeResult:
    episode = Episode.model_validate_json(item["episode"])
    outcome = TaskOutcome.model_validate_json(item["outcome"])
    trace = None
    if trace_dir is not None and item["trace"] is not None:
        trace_dir.mkdir(parents=True, exist_ok=True)
        trace = trace_dir / f"{episode.header.episode_id}.jsonl"
        trace.write_text(item["trace"])
        outcome = outcome.model_copy(update={"trace": str(trace)})
    return EpisodeResult(item["task_id"], item["index"], episode, outcome, trace, item["worker"])


class RayRolloutPool:
    """A long-lived set of rollout actors: start once, collect many times, close.

    A trainer keeps one pool across iterations so actor processes (and, with the llama.cpp
    factory, their loaded models) are paid for once; :func:`collect_ray` is the one-shot form.
    """

    def __init__(self, factory: PlannerFactory, workers: int = 2, *, cpus_per_worker: float = 1.0) -> None:
        if not ray_available():
            raise UsageError("--ray needs the optional dependency: pip install 'pocketpilot[ray]'")
        if workers < 1:
            raise UsageError("--workers must be at least 1")
        import ray

        if not ray.is_initialized():
            raise UsageError("call ray.init() first (or use collect_ray, which starts a local cluster)")
        actor_cls = ray.remote(num_cpus=cpus_per_worker)(RolloutWorker)
        self.workers = workers
        self._actors = [actor_cls.remote(factory, f"ray-{i}") for i in range(workers)]

    def wait_ready(self) -> None:
        """Block until every actor process is up."""
        import ray

        ray.get([a.ping.remote() for a in self._actors])

    def collect(self, tasks: Sequence[TaskSpec], group_size: int, *, trace_dir: Path | None = None) -> RolloutReport:
        """G rollouts of each task, spread over the actors as they free up."""
        from ray.util import ActorPool

        jobs = episode_jobs(tasks, group_size)
        t0 = time.monotonic()
        items = list(ActorPool(self._actors).map_unordered(lambda actor, job: actor.run.remote(*job), jobs))
        results = [_receive(item, trace_dir) for item in items]
        wall = time.monotonic() - t0
        return RolloutReport(results, group_results(results, group_size), "ray", self.workers, wall)

    def close(self) -> None:
        """Release the factories' models and stop the actors."""
        import ray

        try:
            ray.get([a.close.remote() for a in self._actors])
        finally:
            for actor in self._actors:
                ray.kill(actor)
            self._actors = []

    def __enter__(self) -> RayRolloutPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def collect_ray(
    tasks: Sequence[TaskSpec],
    group_size: int,
    factory: PlannerFactory,
    *,
    workers: int = 2,
    trace_dir: Path | None = None,
    address: str | None = None,
    cpus_per_worker: float = 1.0,
) -> RolloutReport:
    """Distribute the episodes over ``workers`` Ray actors (connects to or starts a cluster).

    If Ray is not initialized, this initializes it (``address`` or a local cluster) and shuts it
    down afterwards; a caller that initialized Ray keeps its cluster. The reported wall time
    includes starting the actors.

    Raises:
        UsageError: Ray is not installed, or ``workers`` < 1.
    """
    if not ray_available():
        raise UsageError("--ray needs the optional dependency: pip install 'pocketpilot[ray]'")
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    import ray

    jobs = episode_jobs(tasks, group_size)
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    t0 = time.monotonic()
    try:
        with RayRolloutPool(factory, min(workers, len(jobs)), cpus_per_worker=cpus_per_worker) as pool:
            report = pool.collect(tasks, group_size, trace_dir=trace_dir)
    finally:
        if started:
            ray.shutdown()
    return RolloutReport(report.results, report.groups, "ray", workers, time.monotonic() - t0)
