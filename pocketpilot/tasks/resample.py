"""Resample the training task mix from what a bench run showed: more of what is unstable, less of what is mastered.

Rule ``resample/1``, per task over every outcome in the reports (all modes, all rollouts):

- *unstable* (some successes, some failures): weight 3, where learning signal is;
- *mastered* (every outcome a success): weight 0.25, kept so it is not forgotten;
- *failing* (no success): weight 1.5 when it made verified progress, else 1;
- new tasks, generated from the templates of the failing and unstable tasks' capabilities and of
  their diagnosis categories (the map below), weight 2.

The mix records the rule version and the sha256 of every input, so a training run can say which
report and labels its sampling came from.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import UsageError

__all__ = ["CATEGORY_FAMILIES", "RULE", "TaskMix", "load_mix", "mix_weights", "resample", "task_status"]

RULE = "resample/1"
WEIGHTS = {"unstable": 3.0, "mastered": 0.25, "failing_progress": 1.5, "failing": 1.0, "new": 2.0}
CATEGORY_FAMILIES: dict[str, tuple[str, ...]] = {
    "decomposition": ("multi_step", "ordering"),
    "premature_stop": ("multi_step", "precondition"),
    "argument_grounding": ("single_call", "clarification"),
    "routing": ("single_call", "conditional"),
    "state_tracking": ("conditional", "recovery", "memory_reconcile"),
    "recovery": ("recovery",),
    "retrieval_miss": ("memory_recall",),
    "stale_memory": ("memory_recall", "memory_reconcile"),
    "missing_skill": ("precondition",),
    "conflicting_skill": ("precondition",),
    "wrong_tool_exposure": ("handoff_read", "handoff_id"),
}
"""Diagnosis category → template families whose tasks exercise what failed."""

Status = Literal["unstable", "mastered", "failing"]


class TaskMix(BaseModel):
    """Sampling weights per task id, versioned by rule and inputs."""

    model_config = ConfigDict(frozen=True)

    rule: str = RULE
    inputs: dict[str, str] = Field(default_factory=dict)
    """Input file → sha256."""
    weights: dict[str, float]
    status: dict[str, str] = Field(default_factory=dict)
    categories: dict[str, int] = Field(default_factory=dict)
    """Diagnosis categories of the failed episodes."""
    templates: list[str] = Field(default_factory=list)
    """Templates new tasks were generated from."""
    generated: list[str] = Field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Tasks per status."""
        return dict(Counter(self.status.values()))

    def weight(self, task_id: str | None) -> float:
        """A task's sampling weight; 1 for a task the mix does not know (it was not measured)."""
        return self.weights.get(task_id, 1.0) if task_id is not None else 1.0


def load_mix(path: Path) -> TaskMix:
    """Read a mix written by ``pocketpilot tasks resample``.

    Raises:
        UsageError: not a task mix.
    """
    from pydantic import ValidationError

    try:
        return TaskMix.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise UsageError(f"{path}: not a task mix ({type(exc).__name__})") from exc


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _outcomes(report: dict[str, Any]) -> list[dict[str, Any]]:
    runs = report.get("runs")
    if not isinstance(runs, dict):
        raise UsageError("not a bench report (no runs): see `pocketpilot bench --out`")
    return [o for run in runs.values() for o in run.get("outcomes", [])]


def task_status(outcomes: list[dict[str, Any]]) -> dict[str, tuple[Status, float]]:
    """Each task's status and mean progress over its outcomes."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for o in outcomes:
        by[o["task_id"]].append(o)
    out: dict[str, tuple[Status, float]] = {}
    for task_id, items in by.items():
        wins = sum(bool(o.get("success")) for o in items)
        progress = sum(float(o.get("progress") or 0.0) for o in items) / len(items)
        status: Status = "mastered" if wins == len(items) else "failing" if wins == 0 else "unstable"
        out[task_id] = (status, progress)
    return out


def mix_weights(status: dict[str, tuple[Status, float]]) -> dict[str, float]:
    """The rule's weight for each task."""
    weights = {}
    for task_id, (s, progress) in status.items():
        if s == "failing":
            weights[task_id] = WEIGHTS["failing_progress"] if progress > 0 else WEIGHTS["failing"]
        else:
            weights[task_id] = WEIGHTS[s]
    return weights


def _labels(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}: not JSONL of diagnoses ({exc.msg})") from exc
        if isinstance(item, dict) and item.get("task_id") and item.get("category"):
            out.setdefault(str(item["task_id"]), str(item["category"]))
    return out


def resample(
    report: Path | list[Path],
    *,
    labels: Path | None = None,
    tasks_dir: Path | None = None,
    new_count: int = 0,
    new_dir: Path | None = None,
    seed: int = 0,
) -> TaskMix:
    """Build the mix from bench report(s) and optional diagnosis labels; optionally generate new tasks.

    Raises:
        UsageError: a file that is not a bench report or not diagnosis JSONL.
    """
    reports = report if isinstance(report, list) else [report]
    outcomes: list[dict[str, Any]] = []
    inputs: dict[str, str] = {}
    for path in reports:
        try:
            outcomes.extend(_outcomes(json.loads(path.read_text(encoding="utf-8"))))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}: not JSON ({exc.msg})") from exc
        inputs[str(path)] = _sha(path)
    status = task_status(outcomes)
    weights = mix_weights(status)
    by_task = _labels(labels) if labels else {}
    if labels:
        inputs[str(labels)] = _sha(labels)
    troubled = {t for t, (s, _) in status.items() if s != "mastered"}
    categories = Counter(c for t, c in by_task.items() if t in troubled)
    capability = {o["task_id"]: o.get("capability") for o in outcomes}
    templates: list[str] = []
    generated: list[str] = []
    if new_count > 0:
        from .gen_world import load_gen_world
        from .generate import generate, write_tasks
        from .template import load_templates

        ts = load_templates()
        families = {f for c in categories for f in CATEGORY_FAMILIES.get(c, ())}
        caps = {capability[t] for t in troubled}
        templates = [t.id for t in ts.templates if t.family in families or t.capability in caps]
        if templates:
            known: set[str] = set()
            if tasks_dir is not None:
                from .loader import load_suite

                known = {t.goal for t in load_suite(directory=tasks_dir)}
            gen = generate(load_gen_world(None), ts, count=new_count, seed=seed, only=templates,
                           prefix=f"rs{seed}-", existing_goals=known)
            write_tasks(gen, new_dir or Path("resampled"), clean=False)
            generated = [t["id"] for t in gen.tasks]
            weights.update({t: WEIGHTS["new"] for t in generated})
    return TaskMix(inputs=inputs, weights=dict(sorted(weights.items())),
                   status={t: s for t, (s, _) in sorted(status.items())}, categories=dict(categories),
                   templates=templates, generated=generated)
