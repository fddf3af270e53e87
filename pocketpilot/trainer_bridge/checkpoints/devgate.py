"""Dev-set gate: the candidate must not solve fewer dev tasks than the version serving now.

The evaluation function is injected: the default runs the real harness with a llama.cpp
planner per target (seconds to minutes per task), tests and dry runs pass a cheap one. Both
targets run the same task subset, so the comparison is paired.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from pydantic import BaseModel, ConfigDict

from ...evaluation.compare import SuiteReport, run_suite
from ...tasks import TaskSpec
from .errors import GateFailedError
from .parity import ModelTarget

__all__ = ["DevGateReport", "Evaluator", "dev_gate", "llama_evaluator", "run_dev_gate"]

logger = logging.getLogger(__name__)

Evaluator = Callable[[ModelTarget, Sequence[TaskSpec]], Awaitable[SuiteReport]]
"""``await evaluate(target, tasks)`` runs the tasks with a planner serving ``target``."""


async def llama_evaluator(target: ModelTarget, tasks: Sequence[TaskSpec]) -> SuiteReport:
    """Run ``tasks`` through the harness with an in-process llama.cpp planner on ``target``."""
    from ...harness.planners import LlamaCppPlanner

    planner = LlamaCppPlanner(target.model, lora_path=target.lora)
    try:
        return await run_suite(tasks, planner)
    finally:
        await planner.aclose()


class DevGateReport(BaseModel):
    """Paired success rates on the dev subset."""

    model_config = ConfigDict(frozen=True)

    tasks: list[str]
    candidate_success_rate: float
    serving_success_rate: float
    max_regression: float
    candidate_failed: list[str]
    serving_failed: list[str]
    wall_s: float
    passed: bool


def _failed(report: SuiteReport) -> list[str]:
    return sorted(o.task_id for o in report.outcomes if not o.success)


def _rate(report: SuiteReport, n: int) -> float:
    if len(report.outcomes) != n:
        raise GateFailedError("dev", f"the evaluator returned {len(report.outcomes)} outcomes for {n} tasks")
    return sum(o.success for o in report.outcomes) / n


async def run_dev_gate(
    candidate: ModelTarget,
    serving: ModelTarget,
    tasks: Sequence[TaskSpec],
    *,
    evaluate: Evaluator = llama_evaluator,
    max_regression: float = 0.0,
) -> DevGateReport:
    """Evaluate both targets on ``tasks``; ``passed`` iff candidate ≥ serving − ``max_regression``."""
    if not tasks:
        raise ValueError("the dev-set gate needs at least one task")
    t0 = time.monotonic()
    serving_report = await evaluate(serving, tasks)
    candidate_report = await evaluate(candidate, tasks)
    cand, serv = _rate(candidate_report, len(tasks)), _rate(serving_report, len(tasks))
    report = DevGateReport(
        tasks=[t.id for t in tasks],
        candidate_success_rate=cand,
        serving_success_rate=serv,
        max_regression=max_regression,
        candidate_failed=_failed(candidate_report),
        serving_failed=_failed(serving_report),
        wall_s=time.monotonic() - t0,
        passed=cand + 1e-12 >= serv - max_regression,
    )
    logger.info("dev gate on %d tasks: candidate %.2f vs serving %.2f", len(tasks), cand, serv)
    return report


def dev_gate(report: DevGateReport) -> DevGateReport:
    """Return the report if it passed, else raise GateFailedError carrying it."""
    if not report.passed:
        raise GateFailedError(
            "dev",
            f"success {report.candidate_success_rate:.0%} < serving {report.serving_success_rate:.0%} "
            f"(allowed regression {report.max_regression:.0%}) on {len(report.tasks)} dev tasks; "
            f"newly failed: {sorted(set(report.candidate_failed) - set(report.serving_failed))}",
            report,
        )
    return report
