"""Drive a BFCL multi-turn task through pocketpilot sessions, turn after turn, on one world.

Each user turn is one :class:`~pocketpilot.harness.Session` run on the task's persistent world,
with the earlier turns carried as the harness's own conversation (``Session.turns``, what
:class:`~pocketpilot.harness.Conversation` sends through; rendered and budgeted by the session).
A turn gets a session of its own because what the harness routes is per request (preloaded
skills, offered actions, guidance) and so is the verifier: after each turn BFCL's checker
judges the worlds (:class:`~pocketpilot.suites.bfcl.TurnJudge`) as that turn's verifier, so
each turn's trace holds its verdict.

Modes mean what they mean in :mod:`pocketpilot.evaluation.compare`: ``bare`` is the plain loop with
every tool exposed and only the safety policies; ``harness`` runs the harness kit's session
arguments for the turn's request (skills, gates, adapter guidance filtered to the exposed
tools, and the default policy set η names). A BFCL task has no memories and no device, so the
memory store and the device clock of the phone suite have nothing to hold here and are left
out in both modes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..contracts import CriterionResult, Episode, Finish, ToolCallAction, Verdict
from ..errors import PocketPilotError
from ..evaluation.compare import HarnessKit, Mode, load_harness_kit
from ..harness import (
    AllowAll,
    Confirmer,
    ContextBudget,
    HarnessConfig,
    Planner,
    Session,
    safety_policies,
)
from ..ids import SeededIds
from .bfcl import BfclSuite, BfclTask, BfclWorld, TurnCheck, TurnJudge

__all__ = [
    "BFCL_BUDGET",
    "BfclOutcome",
    "model_calls",
    "oracle_actions",
    "run_bfcl_task",
]

logger = logging.getLogger(__name__)

DEFAULT_TURN_STEPS = 10
"""Planner steps per user turn (BFCL itself stops a turn after 20 model steps)."""
BFCL_BUDGET = ContextBudget(tools=5000, history=2500)
"""BFCL's function docs are long and shown verbatim: the tools of two classes exceed the phone
suite's tools budget."""


class BfclOutcome(BaseModel):
    """One task's result in one mode."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    mode: Mode
    success: bool
    turns: int
    turns_run: int
    """Turns actually run (a run stops at its first failed turn unless told to go on)."""
    checks: list[TurnCheck] = Field(default_factory=list)
    stop_reasons: list[str | None] = Field(default_factory=list)
    steps: int = 0
    prompt_tokens_evaluated: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    traces: list[str] = Field(default_factory=list)
    error: str | None = None
    """Set when a turn's session raised instead of stopping (a planner backend failure)."""

    @property
    def failed_check(self) -> TurnCheck | None:
        """The first turn BFCL's checker rejected, if any."""
        return next((c for c in self.checks if not c.valid), None)


def model_calls(episode: Episode) -> int:
    """Tool calls the planner emitted in ``episode`` (BFCL fails a turn with ground truth and none)."""
    return sum(len(s.action.calls) for s in episode.steps if isinstance(s.action, ToolCallAction))


def oracle_actions(suite: BfclSuite, task: BfclTask) -> list[Any]:
    """The ground truth as planner actions: each turn's calls one per step, then a finish."""
    world = suite.world(task)  # only to name positional arguments from the methods' signatures
    actions: list[Any] = []
    for turn, calls in enumerate(task.ground_truth):
        actions.extend(ToolCallAction(calls=[world.tool_call(c)]) for c in calls)
        actions.append(Finish(summary=f"turn {turn} done" if calls else "nothing to call for this request"))
    return actions


def _verdict(check: TurnCheck) -> Verdict:
    if not check.checked:
        return Verdict(success=True, criteria=[CriterionResult(name="bfcl:no_ground_truth", passed=True)])
    detail = "; ".join(x for x in (check.error_type, check.error_message, check.details) if x)
    return Verdict(
        success=check.valid,
        criteria=[CriterionResult(name="bfcl:state_and_response", passed=check.valid, detail=detail[:1000])],
    )


def _turn_session(
    planner: Planner,
    world: BfclWorld,
    request: str,
    earlier: list[Episode],
    *,
    mode: Mode,
    kit: HarnessKit | None,
    **common: Any,
) -> Session:
    """A session for one turn that continues the conversation of the turns before it.

    The session's own conversation (``Session.turns``) carries the earlier turns, so they reach
    the planner rendered and budgeted as in any multi-request use of the harness.
    """
    if mode == "harness":
        assert kit is not None
        # specs, not names: BFCL's cancel_order or place_order is not the sandbox's, nor are its notes
        kwargs = kit.session_kwargs(world.registry.tools(), memory=False, request=request)
        session = Session(planner, world.registry, **common, **kwargs)
    else:
        session = Session(planner, world.registry, **common, policies=safety_policies())
    session.turns.extend(earlier)
    return session


async def run_bfcl_task(
    suite: BfclSuite,
    task: BfclTask,
    planner: Planner,
    *,
    mode: Mode = "bare",
    kit: HarnessKit | None = None,
    config: HarnessConfig | None = None,
    trace_dir: Path | None = None,
    confirm: Confirmer | None = None,
    stop_at_first_failure: bool = True,
    on_turn: Callable[[int, TurnCheck], None] | None = None,
) -> BfclOutcome:
    """Run every turn of ``task`` in ``mode`` on one fresh world and judge each with BFCL's checker.

    Args:
        suite: The suite (wheel, docs, semantics, checker).
        task: The task.
        planner: The planner; the same instance serves every turn (and both modes in a comparison).
        mode: ``bare`` or ``harness`` (see the module docstring).
        kit: The harness kit (harness mode); default :func:`~pocketpilot.evaluation.compare.load_harness_kit`,
            as in the evaluation.
        config: Budgets per turn; default ``DEFAULT_TURN_STEPS`` steps and :data:`BFCL_BUDGET`.
        trace_dir: Where each turn's trace goes (one file per turn, ``task_id`` ``<id>#<turn>``).
        confirm: Who approves calls needing confirmation; default allow all (the world is
            disposable and BFCL judges those calls itself).
        stop_at_first_failure: A failed turn fails the task in BFCL, so later turns cannot
            change the outcome; stopping saves their planner time.
        on_turn: Called with each turn's check as it is made.
    """
    t0 = time.monotonic()
    confirm = confirm or AllowAll()
    cfg = config or HarnessConfig(max_steps=DEFAULT_TURN_STEPS, budget=BFCL_BUDGET)
    if mode == "harness":
        kit = kit if kit is not None else load_harness_kit()
    world = suite.world(task)
    judge = TurnJudge(suite, task, world)
    subagent_ids = SeededIds(f"{task.id}/{mode}").derive("subagents")  # one stream over the turns: see run_task_episode
    earlier: list[Episode] = []
    checks: list[TurnCheck] = []
    stops: list[str | None] = []
    traces: list[str] = []
    steps = prompt_tokens = completion_tokens = 0
    error: str | None = None
    for turn, request in enumerate(task.turns):

        async def verifier(episode: Episode, _turn: int = turn) -> Verdict:
            return _verdict(judge.judge(_turn, model_calls(episode)))

        session = _turn_session(planner, world, request, earlier, mode=mode, kit=kit, config=cfg,
                                confirm=confirm, verifier=verifier, trace_dir=trace_dir,
                                task_id=f"{task.id}#{turn}", subagent_ids=subagent_ids)
        try:
            episode = await session.run(request)
        except PocketPilotError as exc:  # a planner backend or context failure ends this task, not the suite
            logger.warning("%s turn %d: session raised %s: %s", task.id, turn, type(exc).__name__, exc)
            error = f"turn {turn}: {type(exc).__name__}: {exc}"
            checks.append(judge.checks[turn] if turn in judge.checks else judge.judge(turn, 0))
            break
        check = judge.judge(turn, model_calls(episode))  # the verifier's cached result
        checks.append(check)
        stops.append(episode.stop_reason)
        usage = episode.usage()
        steps += len(episode.steps)
        prompt_tokens += usage["prompt_tokens_evaluated"]
        completion_tokens += usage["completion_tokens"]
        if session.trace_path is not None:
            traces.append(str(session.trace_path))
        if on_turn is not None:
            on_turn(turn, check)
        if not check.valid and stop_at_first_failure:
            break
        earlier.append(episode)
    success = error is None and len(checks) == len(task.turns) and all(c.valid for c in checks)
    return BfclOutcome(
        task_id=task.id,
        mode=mode,
        success=success,
        turns=len(task.turns),
        turns_run=len(checks),
        checks=checks,
        stop_reasons=stops,
        steps=steps,
        prompt_tokens_evaluated=prompt_tokens,
        completion_tokens=completion_tokens,
        wall_s=time.monotonic() - t0,
        traces=traces,
        error=error,
    )
