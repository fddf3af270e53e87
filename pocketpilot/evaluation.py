"""Run tasks through the harness and aggregate what the report measures per capability.

One planner instance serves the whole suite (loading a GGUF costs seconds); each task gets a
fresh sandbox phone, its own exposed tools, and its verifier.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .contracts import Episode
from .harness import AllowAll, HarnessConfig, Planner, Session
from .tasks import TaskSpec, prepare

__all__ = ["SuiteReport", "TaskOutcome", "run_suite", "run_task"]


class TaskOutcome(BaseModel):
    """One task's result."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    capability: str
    group: str
    success: bool
    progress: float
    stop_reason: str | None
    steps: int
    prompt_tokens_evaluated: int
    completion_tokens: int
    wall_s: float
    trace: str | None = None


class SuiteReport(BaseModel):
    """Outcomes plus aggregates by capability."""

    model_config = ConfigDict(frozen=True)

    planner: dict[str, object]
    outcomes: list[TaskOutcome]

    def by(self, key: str) -> dict[str, dict[str, float]]:
        """Success rate, mean steps, mean output tokens and mean wall time per ``key`` value."""
        groups: dict[str, list[TaskOutcome]] = defaultdict(list)
        for o in self.outcomes:
            groups[getattr(o, key)].append(o)
        groups["ALL"] = list(self.outcomes)
        return {
            name: {
                "tasks": len(items),
                "success_rate": sum(o.success for o in items) / len(items),
                "mean_progress": statistics.fmean(o.progress for o in items),
                "mean_steps": statistics.fmean(o.steps for o in items),
                "mean_output_tokens": statistics.fmean(o.completion_tokens for o in items),
                "mean_wall_s": statistics.fmean(o.wall_s for o in items),
            }
            for name, items in groups.items()
            if items
        }

    def markdown(self, key: str = "capability") -> str:
        """The per-``key`` table as Markdown."""
        rows = [f"| {key} | tasks | success | progress | steps | output tok | wall s |", "|---|---|---|---|---|---|---|"]
        for name, m in sorted(self.by(key).items(), key=lambda kv: (kv[0] == "ALL", kv[0])):
            rows.append(
                f"| {name} | {m['tasks']:.0f} | {m['success_rate']:.0%} | {m['mean_progress']:.2f} | "
                f"{m['mean_steps']:.1f} | {m['mean_output_tokens']:.0f} | {m['mean_wall_s']:.1f} |"
            )
        return "\n".join(rows)


async def run_task(
    task: TaskSpec, planner: Planner, *, trace_dir: Path | None = None, config: HarnessConfig | None = None
) -> tuple[Episode, TaskOutcome]:
    """Run one task on a fresh sandbox phone and verify it."""
    run = prepare(task)
    cfg = config or HarnessConfig(max_steps=task.max_steps)
    session = Session(
        planner,
        run.executor,
        config=cfg,
        confirm=AllowAll(),  # the sandbox is disposable; tasks judge destructive calls themselves
        verifier=run.verifier,
        trace_dir=trace_dir,
        task_id=task.id,
    )
    t0 = time.monotonic()
    episode = await session.run(task.goal)
    usage = episode.usage()
    verdict = episode.verdict
    outcome = TaskOutcome(
        task_id=task.id,
        capability=task.capability,
        group=task.group,
        success=bool(verdict and verdict.success),
        progress=verdict.progress if verdict else 0.0,
        stop_reason=episode.stop_reason,
        steps=len(episode.steps),
        prompt_tokens_evaluated=usage["prompt_tokens_evaluated"],
        completion_tokens=usage["completion_tokens"],
        wall_s=time.monotonic() - t0,
        trace=str(session.trace_path) if session.trace_path else None,
    )
    return episode, outcome


async def run_suite(
    tasks: Sequence[TaskSpec],
    planner: Planner,
    *,
    trace_dir: Path | None = None,
    on_task: Callable[[int, TaskOutcome], None] | None = None,
) -> SuiteReport:
    """Run tasks one after another (one planner, one model in memory)."""
    outcomes = []
    for i, task in enumerate(tasks):
        _, outcome = await run_task(task, planner, trace_dir=trace_dir)
        outcomes.append(outcome)
        if on_task:
            on_task(i, outcome)
    return SuiteReport(planner=planner.info.model_dump(mode="json"), outcomes=outcomes)
