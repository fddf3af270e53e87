"""Replay tasks' oracles through the harness: a golden path the harness blocks is a defect.

A task's oracle is one known-good action sequence. Replayed by a :class:`ScriptedPlanner`
through the same session the bench and ``pocketpilot run --task`` build (harness mode: the
default policies, the kit's skills, gates and guidance), it must still pass: when it does not,
a guard, a gate or an offer of the harness stood in the way of a correct run (issue 34: the
scope guard held an honestly declared ``setting`` repair in 900 of 2,285 golden runs that bare
mode completed). This is the standing check for any world: a team calls
:func:`replay_oracles` on its own task folder, or runs ``pocketpilot tasks check-oracles DIR``,
which exits non-zero on a blocked golden path.

It lives outside :mod:`pocketpilot.tasks` because it builds harness sessions, and the tasks
package never imports the harness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from ..contracts import Episode, ToolCallAction
from ..harness import Confirmer
from ..harness.planners import ScriptedPlanner
from ..tasks import TaskSpec, oracle_actions
from .task_episode import HarnessKit, Mode, load_harness_kit

__all__ = ["BlockedOracle", "replay_oracles"]


class BlockedOracle(BaseModel):
    """One oracle that did not pass when replayed in one mode, with what stood in its way."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    mode: Mode
    stop_reason: str
    stop_detail: str
    failed_criteria: list[str]
    unplayed: int
    """Oracle actions the run never asked for (it stopped before the end of the golden path)."""
    failures: list[str]
    """Each failed call or rejected action of the replay (``step 3: reset_apn_settings: not_allowed: ...``)."""

    def line(self) -> str:
        """One line for a report: what failed, and the first thing that stood in the way."""
        why = self.failures[0] if self.failures else f"stopped: {self.stop_reason}: {self.stop_detail[:120]}"
        criteria = ", ".join(self.failed_criteria) or "none"
        return f"{self.task_id} [{self.mode}]: failed criteria {criteria}; {why}"


def _failures(episode: Episode) -> list[str]:
    out = []
    for step in episode.steps:
        if step.error is not None:
            out.append(f"step {step.index + 1}: {step.error.code}: {step.error.message[:160]}")
        calls = step.action.calls if isinstance(step.action, ToolCallAction) else []
        names = [c.name for c in calls] or [step.action.kind if step.action is not None else "action"]
        for i, result in enumerate(step.results):
            if result.error is not None:
                name = names[i] if i < len(names) else names[-1]
                out.append(f"step {step.index + 1}: {name}: {result.error.code}: {result.error.message[:160]}")
    return out


async def replay_oracles(
    tasks: Iterable[TaskSpec],
    *,
    modes: Sequence[Mode] = ("harness",),
    kit: HarnessKit | None = None,
    confirm: Confirmer | None = None,
    on_task: Callable[[TaskSpec], None] | None = None,
) -> list[BlockedOracle]:
    """Replay each task's oracle in each mode; return the ones that did not pass (empty: none blocked).

    A replay passes when the task's verifier accepts the episode and the run asked for every
    oracle action. Tasks without an oracle are skipped.

    Args:
        tasks: The tasks (``load_suite(directory=...)`` for a folder).
        modes: ``harness`` (the default session, policies and kit) and/or ``bare``.
        kit: The harness's skills, gates and guidance; default :func:`load_harness_kit`, as the bench.
        confirm: Who answers confirmations; default allow all, as the bench (the world is disposable).
        on_task: Called with each task before its replays (progress).
    """
    from .compare import run_task  # the bench's own run: what it measures is what is checked

    kit = kit if kit is not None else load_harness_kit()
    blocked: list[BlockedOracle] = []
    for task in tasks:
        if not task.oracle:
            continue
        if on_task is not None:
            on_task(task)
        for mode in modes:
            planner = ScriptedPlanner(oracle_actions(task))
            episode, outcome = await run_task(task, planner, mode=mode, kit=kit, confirm=confirm)
            if outcome.success and planner.remaining == 0:
                continue
            blocked.append(BlockedOracle(
                task_id=task.id, mode=mode, stop_reason=episode.stop_reason, stop_detail=episode.stop_detail,
                failed_criteria=outcome.failed_criteria, unplayed=planner.remaining, failures=_failures(episode),
            ))
    return blocked
