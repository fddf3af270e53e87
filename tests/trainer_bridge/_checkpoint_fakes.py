"""Cheap stand-ins for the two gates' measurements (the tiny GGUF files do not run in llama.cpp)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pocketpilot.evaluation.compare import SuiteReport, TaskOutcome
from pocketpilot.tasks import TaskSpec
from pocketpilot.trainer_bridge.checkpoints import ModelTarget, ParityBounds, ParityReport


def parity_measure(top1: float = 0.97, kl: float = 0.02, calls: list | None = None,
                   by_target: Callable[[ModelTarget], tuple[float, float]] | None = None) -> object:
    """Parity figures fixed (or per deployable), judged by the real bounds; records what it compared."""

    def measure(deployable: ModelTarget, reference: ModelTarget, prompts: Sequence[str], *,
                bounds: ParityBounds | None = None) -> ParityReport:
        b = bounds or ParityBounds()
        if calls is not None:
            calls.append((deployable, reference))
        t, k = by_target(deployable) if by_target else (top1, kl)
        return ParityReport(deployable=deployable.describe(), reference=reference.describe(), prompts=len(prompts),
                            positions=10 * len(prompts), top1_agreement=t, mean_kl=k, max_kl=3 * k, wall_s=0.0,
                            bounds=b, passed=b.admits(t, k))

    return measure


def outcome_evaluator(solves: Callable[[ModelTarget, TaskSpec], bool], calls: list | None = None) -> object:
    """A dev-set evaluator whose outcome per (target, task) is given: the gate's arithmetic, no harness."""

    async def evaluate(target: ModelTarget, tasks: Sequence[TaskSpec]) -> SuiteReport:
        if calls is not None:
            calls.append(target)
        outcomes = [TaskOutcome(task_id=t.id, capability="x", group="x", success=solves(target, t),
                                progress=1.0, stop_reason=None, steps=1, prompt_tokens_evaluated=0,
                                completion_tokens=0, wall_s=0.0) for t in tasks]
        return SuiteReport(planner={"target": target.describe()}, outcomes=outcomes)

    return evaluate
