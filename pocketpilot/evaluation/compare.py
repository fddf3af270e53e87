"""Run tasks with or without the harness and aggregate what the report measures.

The report's headline is one planner checkpoint measured twice: inside its harness (memory
retrieval, skills, adapter guidance, precondition gates) and bare. Both configurations see the
same information, so the difference is the harness's lift:

- ``harness``: a per-task :class:`~pocketpilot.memory.SqliteMemory` seeded from the task,
  recalled for the request before the first step and shown with it as evidence with
  provenance (``memory_search`` stays available; ``memory_write`` only when the request asks to
  remember: episodes are captured at the end anyway); the built-in skills, the ones the request
  needs routed into the first context by the adapter (no ``load_skill`` step), their always-on
  precondition gates, and adapter guidance filtered to the exposed tools and the request under
  a compiled η, re-filtered when a loaded skill exposes tools (see :class:`HarnessKit`); the
  device's clock as evidence; and the harness's default policies (the set η names: see
  :mod:`pocketpilot.harness.policies`), the same set ``pocketpilot run`` and the library use.
- ``bare``: the task's memories replayed as raw earlier conversation (oldest dropped first
  over budget) and every exposed tool with its schema; no retrieval, no skills, no guidance,
  no gates, and only the safety policies (confirmation). Sub-agents (``delegate``) are part of the action
  vocabulary in both modes.

One planner instance serves the whole suite (loading a GGUF costs seconds); each task gets a
fresh world (the sandbox phone, or the one its file brings), its own exposed tools, its own
memory store and its verifier. The run itself is :mod:`pocketpilot.evaluation.task_episode`, which
``pocketpilot run --task`` uses without this module.
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..contracts import Episode, Step
from ..harness import Confirmer, HarnessConfig, Planner
from ..harness.observer import RunObserver
from ..memory import Embedder
from ..tasks import TaskSpec
from .task_episode import (
    HarnessKit,
    Mode,
    RunSettings,
    device_clock,
    load_harness_kit,
    recall_guidance,
    run_task_episode,
)

__all__ = [
    "BENCH_SCHEMA",
    "BenchReport",
    "HarnessKit",
    "Mode",
    "RunSettings",
    "SuiteReport",
    "TaskOutcome",
    "load_harness_kit",
    "device_clock",
    "recall_guidance",
    "run_comparison",
    "run_suite",
    "run_task",
]


BENCH_SCHEMA = "pocketpilot.bench/1"
"""Version tag of the bench JSON; bump it when fields change meaning."""


class TaskOutcome(BaseModel):
    """One task's result."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    capability: str
    group: str
    domain: str = ""
    """The first app the task names (its ``domains``); empty for a task that names none."""
    mode: Mode = "harness"
    success: bool
    progress: float
    stop_reason: str | None
    steps: int
    prompt_tokens_evaluated: int
    completion_tokens: int
    wall_s: float
    failed_criteria: list[str] = Field(default_factory=list)
    gate_violations: int | None = None
    """Calls that reached the executor although a declared precondition was unmet (None: no
    preconditions are declared, so nothing could be counted)."""
    trace: str | None = None
    task_digest: str = ""
    """The task's :meth:`TaskSpec.digest` when it ran (empty in logs older than the field)."""


def _summary(items: Sequence[TaskOutcome]) -> dict[str, float]:
    violations = [o.gate_violations for o in items if o.gate_violations is not None]
    return {
        "tasks": len(items),
        "success_rate": sum(o.success for o in items) / len(items),
        "mean_progress": statistics.fmean(o.progress for o in items),
        "mean_steps": statistics.fmean(o.steps for o in items),
        "mean_output_tokens": statistics.fmean(o.completion_tokens for o in items),
        "mean_wall_s": statistics.fmean(o.wall_s for o in items),
        "gate_violations": float(sum(violations)) if violations else float("nan"),
    }


class SuiteReport(BaseModel):
    """Outcomes of one configuration plus aggregates by capability or group."""

    model_config = ConfigDict(frozen=True)

    planner: dict[str, object]
    outcomes: list[TaskOutcome]
    mode: Mode = "harness"

    def by(self, key: str) -> dict[str, dict[str, float]]:
        """Success rate, mean steps, mean output tokens and mean wall time per ``key`` value (plus ALL)."""
        groups: dict[str, list[TaskOutcome]] = defaultdict(list)
        for o in self.outcomes:
            groups[getattr(o, key)].append(o)
        groups["ALL"] = list(self.outcomes)
        return {name: _summary(items) for name, items in groups.items() if items}

    def markdown(self, key: str = "capability") -> str:
        """The per-``key`` table as Markdown."""
        rows = [f"| {key} | tasks | success | progress | steps | output tok | wall s |", "|---|---|---|---|---|---|---|"]
        for name, m in sorted(self.by(key).items(), key=lambda kv: (kv[0] == "ALL", kv[0])):
            rows.append(
                f"| {name} | {m['tasks']:.0f} | {m['success_rate']:.0%} | {m['mean_progress']:.2f} | "
                f"{m['mean_steps']:.1f} | {m['mean_output_tokens']:.0f} | {m['mean_wall_s']:.1f} |"
            )
        return "\n".join(rows)


class BenchReport(BaseModel):
    """The report's comparison: one planner, one task list, one or both configurations."""

    model_config = ConfigDict(frozen=True)

    planner: dict[str, object]
    split: str | None
    task_ids: list[str]
    kit: dict[str, Any]
    """What the harness configuration contained (skills, gates, guidance, embedder)."""
    runs: dict[str, SuiteReport]
    """``harness`` and/or ``bare``."""

    def lift(self, key: str = "group") -> dict[str, float]:
        """Harness success rate minus bare success rate, in points, per ``key`` value (needs both runs)."""
        if "harness" not in self.runs or "bare" not in self.runs:
            return {}
        on, off = self.runs["harness"].by(key), self.runs["bare"].by(key)
        return {k: round(100 * (on[k]["success_rate"] - off[k]["success_rate"]), 2) for k in on if k in off}

    def to_json(self) -> dict[str, Any]:
        """The saved form: per-run aggregates by group and capability, outcomes, lift."""
        return {
            "schema": BENCH_SCHEMA,
            "planner": self.planner,
            "split": self.split,
            "task_ids": self.task_ids,
            "kit": self.kit,
            "runs": {
                mode: {
                    "by_group": _finite(report.by("group")),
                    "by_capability": _finite(report.by("capability")),
                    "by_domain": _finite(report.by("domain")),
                    "outcomes": [o.model_dump(mode="json") for o in report.outcomes],
                    "wall_s": {"total": round(sum(o.wall_s for o in report.outcomes), 3),
                               "per_task": {o.task_id: round(o.wall_s, 3) for o in report.outcomes}},
                }
                for mode, report in self.runs.items()
            },
            "lift_points": self.lift("group"),
        }

    def markdown(self) -> str:
        """Per group: success, mean steps, output tokens and wall time of each run, and the lift;
        then success per domain, where the tasks name one (a calibration reads difficulty there).
        """
        tables = [self._table("group")]
        if any(o.domain for r in self.runs.values() for o in r.outcomes):
            tables.append(self._table("domain", brief=True))
        return "\n\n".join(tables)

    def _table(self, key: str, brief: bool = False) -> str:
        modes = [m for m in ("bare", "harness") if m in self.runs]
        head = [key, "tasks"]
        for m in modes:
            head += [f"{m} success"] if brief else [f"{m} success", f"{m} steps", f"{m} out tok", f"{m} wall s"]
        if len(modes) == 2:
            head.append("lift (pts)")
        rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        tables = {m: self.runs[m].by(key) for m in modes}
        lift = self.lift(key)
        names = sorted(tables[modes[0]], key=lambda k: (k == "ALL", k))
        for name in names:
            cells = [name, f"{tables[modes[0]][name]['tasks']:.0f}"]
            for m in modes:
                t = tables[m][name]
                cells += [f"{100 * t['success_rate']:.1f}%"] if brief else [
                    f"{100 * t['success_rate']:.1f}%",
                    f"{t['mean_steps']:.2f}",
                    f"{t['mean_output_tokens']:.0f}",
                    f"{t['mean_wall_s']:.1f}",
                ]
            if len(modes) == 2:
                cells.append(f"{lift[name]:+.1f}")
            rows.append("| " + " | ".join(cells) + " |")
        if brief:
            return "\n".join(rows)
        violations = {m: tables[m]["ALL"]["gate_violations"] for m in modes}
        note = "gate violations reaching the executor: " + ", ".join(
            f"{m} {'n/a' if v != v else int(v)}" for m, v in violations.items()
        )
        return "\n".join([*rows, "", note])


def _finite(table: dict[str, dict[str, float]]) -> dict[str, dict[str, float | None]]:
    """NaN is not JSON: undefined figures become null."""
    return {k: {f: (None if v != v else v) for f, v in row.items()} for k, row in table.items()}


async def run_task(
    task: TaskSpec,
    planner: Planner,
    *,
    mode: Mode = "harness",
    trace_dir: Path | None = None,
    config: HarnessConfig | None = None,
    embedder: Embedder | None = None,
    kit: HarnessKit | None = None,
    prior_budget: int | None = None,
    on_step: Callable[[Step], None] | None = None,
    confirm: Confirmer | None = None,
    observer: RunObserver | None = None,
    settings: RunSettings | None = None,
) -> tuple[Episode, TaskOutcome]:
    """Run one task on a fresh world, in one configuration, and verify it.

    The run itself is :func:`pocketpilot.evaluation.task_episode.run_task_episode` (what ``pocketpilot
    run --task`` does too); this adds the outcome the bench aggregates.

    Args:
        task: The task.
        planner: The planner (the same instance for both modes in a comparison).
        mode: ``harness`` or ``bare`` (see the module docstring).
        trace_dir: Where to write the episode trace.
        config: Budgets; default the task's (its steps and context budgets, under ``settings``).
        embedder: Vector backend of the task's memory store (harness mode); None is keyword-only.
        kit: Skills, gates and guidance of the harness; default :func:`load_harness_kit`.
        prior_budget: Token budget of the earlier conversation (bare mode); None: what the
            planner's context window leaves (:mod:`pocketpilot.evaluation.bare_window`).
        on_step: Called with each step as it is recorded (the CLI prints it).
        confirm: Who answers the harness's questions; default
            :class:`~pocketpilot.evaluation.task_episode.TaskUser` (yes to the confirmations the request
            implies, no to a change it does not name), the CLI asks its user.
        observer: Told about the run as it happens (OpenTelemetry spans, see ``Session``).
        settings: The caller's settings over the task's own (guidance, context budgets, steps).
    """
    t0 = time.monotonic()
    kit = kit if kit is not None else load_harness_kit()
    episode, trace = await run_task_episode(
        task, planner, mode=mode, trace_dir=trace_dir, config=config, embedder=embedder, kit=kit,
        prior_budget=prior_budget, on_step=on_step, confirm=confirm, observer=observer, settings=settings,
    )
    usage = episode.usage()
    verdict = episode.verdict
    outcome = TaskOutcome(
        task_id=task.id,
        capability=task.capability,
        group=task.group,
        domain=task.domains[0] if task.domains else "",
        mode=mode,
        success=bool(verdict and verdict.success),
        progress=verdict.progress if verdict else 0.0,
        stop_reason=episode.stop_reason,
        steps=len(episode.steps),
        prompt_tokens_evaluated=usage["prompt_tokens_evaluated"],
        completion_tokens=usage["completion_tokens"],
        wall_s=time.monotonic() - t0,
        failed_criteria=[c.name for c in verdict.criteria if not c.passed] if verdict else [],
        gate_violations=kit.violations(episode),
        trace=str(trace) if trace else None,
        task_digest=task.digest(),
    )
    return episode, outcome


async def run_suite(
    tasks: Sequence[TaskSpec],
    planner: Planner,
    *,
    mode: Mode = "harness",
    trace_dir: Path | None = None,
    on_task: Callable[[int, TaskOutcome], None] | None = None,
    embedder: Embedder | None = None,
    kit: HarnessKit | None = None,
    settings: RunSettings | None = None,
) -> SuiteReport:
    """Run tasks one after another in one configuration (one planner, one model in memory).

    ``settings``: the caller's over each task's own (see :class:`RunSettings`).
    """
    kit = kit if kit is not None else load_harness_kit()
    outcomes = []
    for i, task in enumerate(tasks):
        sub = trace_dir / mode if trace_dir is not None else None
        _, outcome = await run_task(task, planner, mode=mode, trace_dir=sub, embedder=embedder, kit=kit,
                                    settings=settings)
        outcomes.append(outcome)
        if on_task:
            on_task(i, outcome)
    return SuiteReport(planner=planner.info.model_dump(mode="json"), outcomes=outcomes, mode=mode)


def _settings_record(settings: RunSettings | None) -> dict[str, Any]:
    """What the caller set over the tasks' own settings, for the report (nothing when nothing was set)."""
    out: dict[str, Any] = {}
    if settings is None:
        return out
    if settings.guidance is not None:
        text = "\n".join(settings.guidance)
        out["guidance_override"] = {"entries": len(settings.guidance),
                                    "sha256": hashlib.sha256(text.encode()).hexdigest()}
    if settings.budget:
        out["budget_override"] = dict(settings.budget)
    if settings.max_steps is not None:
        out["max_steps_override"] = settings.max_steps
    return out


async def run_comparison(
    tasks: Sequence[TaskSpec],
    planner: Planner,
    *,
    modes: Sequence[Mode] = ("bare", "harness"),
    split: str | None = None,
    trace_dir: Path | None = None,
    on_task: Callable[[int, TaskOutcome], None] | None = None,
    embedder: Embedder | None = None,
    kit: HarnessKit | None = None,
    done: Mapping[tuple[str, str], TaskOutcome] | None = None,
    settings: RunSettings | None = None,
) -> BenchReport:
    """The report's comparison: the same planner on the same tasks in each mode.

    Modes are interleaved task by task (bare, then harness, on task 1; then task 2 ...), so a
    shared machine's load drift hits both configurations alike and a run cut short still holds
    paired results. ``done``: outcomes of an earlier, interrupted run by ``(task_id, mode)``;
    those are reported as they were and not run again (``on_task`` is not called for them).
    ``settings``: the caller's over each task's own (see :class:`RunSettings`).
    """
    kit = kit if kit is not None else load_harness_kit()
    outcomes: dict[str, list[TaskOutcome]] = {m: [] for m in modes}
    for i, task in enumerate(tasks):
        for mode in modes:
            if done and (task.id, mode) in done:
                outcomes[mode].append(done[(task.id, mode)])
                continue
            sub = trace_dir / mode if trace_dir is not None else None
            _, outcome = await run_task(task, planner, mode=mode, trace_dir=sub, embedder=embedder, kit=kit,
                                        settings=settings)
            outcomes[mode].append(outcome)
            if on_task:
                on_task(i, outcome)
    info = planner.info.model_dump(mode="json")
    return BenchReport(
        planner=info,
        split=split,
        task_ids=[t.id for t in tasks],
        kit=kit.describe() | {"embedder": getattr(embedder, "name", None) or "none (keyword-only)"}
        | _settings_record(settings),
        runs={m: SuiteReport(planner=info, outcomes=o, mode=m) for m, o in outcomes.items()},
    )
