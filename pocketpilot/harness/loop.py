"""One run of the loop: assemble the context, ask the planner, route the action, record, stop.

Nothing here decides what a tool does or whether a call is wise: every intervention is a
policy (:mod:`pocketpilot.harness.policies`), asked before each call, after each step and on
each stop action. The loop only does what their typed outcomes say.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from ..contracts import (
    Action, AskUser, ChatMessage, Delegate, Episode, Finish, LoadSkill, MemorySearch, MemoryWrite, Notice, PlannerTurn,
    Refuse, Step, StopReason, ToolCall, ToolCallAction, ToolError, ToolResult, Verdict, digest, spec_for_call,
    utcnow,
)
from ..errors import MemoryStoreError, PlannerError, PlannerOutputError, UsageError
from . import actions
from .base import PlannerOutput, PlanRequest
from .batch import run_batch
from .observer import CallEnded, CallStarted, DelegateEnded, DelegateStarted, PlanEnded, PlanStarted, RunEnded, RunStarted
from .outcome import Continue, FollowUps, StepOutcome, Stopped
from .policies import Advice, StepReport, batch_groups
from .routed import Routed
from .run_state import RunState

__all__ = ["Run"]

logger = logging.getLogger(__name__)


class Run:
    """One run: the loop over assemble, plan, route, record, stop, over a :class:`RunState` it holds."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        """What the run knows, and the view its policies read."""
        self.deps = state.deps

    # ------------------------------------------------------------------ the loop

    async def start(self) -> None:
        state = self.state
        state.emit(RunStarted(episode_id=state.header.episode_id, header=state.header, depth=state.setup.depth,
                              parent_step=state.setup.parent_step))
        if state.writer:
            await state.writer.header(state.header)

    async def loop(self) -> None:
        request_msg = ChatMessage(role="user", content=self.state.request, section="request")
        prefix, prefix_notices = self.state.prefix()
        for index in range(self.state.cfg.max_steps):
            if index and self.state.refresh_exposure():  # the tools shown for this step changed
                prefix, prefix_notices = self.state.prefix()
            outcome = await self._step(index, prefix, prefix_notices if index == 0 else [], request_msg)
            if isinstance(outcome, FollowUps):
                outcome = await self._harness_step(outcome.calls, index) or Continue(outcome.prefix_changed)
            if isinstance(outcome, Stopped):
                return self.state.stop(outcome.reason, outcome.detail)
            if outcome.prefix_changed:
                prefix, prefix_notices = self.state.prefix()

    async def _step(self, index: int, prefix: ChatMessage, prefix_notices: list[Notice],
                    request_msg: ChatMessage) -> StepOutcome:
        """One planner step: budgets, the plan, routing and advice, the record; what comes next."""
        remaining = self.state.cfg.max_seconds - (time.monotonic() - self.state.started)
        if remaining <= 0:
            return Stopped("max_seconds", f"wall-time budget of {self.state.cfg.max_seconds}s exhausted")
        if self.state.tokens >= self.state.cfg.max_tokens:
            return Stopped("max_tokens", f"token budget of {self.state.cfg.max_tokens} exhausted ({self.state.tokens} used)")
        messages = self.state.assembler.assemble(prefix, request_msg, self.state.history)
        messages[1:1] = self.state.preamble  # earlier conversation and evidence: after the prefix, before the request
        seen, context_digest = self.state.seen(prefix), digest([m.model_dump() for m in messages])
        self.state.offered = tuple(k for k in self.state.kinds if k not in self.state.withheld) or self.state.kinds
        self.state.withheld = frozenset()
        started_at, t0 = utcnow(), time.monotonic()
        try:
            output = await self._plan(PlanRequest(messages=messages, tools=list(self.state.tools.values()),
                                                  kinds=self.state.offered, skills=self.state.loadable(),
                                                  batch_groups=batch_groups(self.state.policies, self.state),
                                                  answers=self.state.cfg.answers), remaining)
        except TimeoutError:
            return Stopped("max_seconds", f"wall-time budget of {self.state.cfg.max_seconds}s exhausted mid-step")
        except PlannerOutputError as exc:
            await self._parse_failure(context_digest, exc, started_at, t0, seen)
            if self.state.parse_failures >= self.state.cfg.max_parse_failures:
                return Stopped("planner_error", f"{self.state.parse_failures} unparseable outputs in a row: {exc.reason}")
            return Continue()
        except PlannerError as exc:
            return Stopped("planner_error", str(exc))
        self.state.parse_failures = 0
        self.state.tokens += output.turn.prompt_tokens_evaluated + output.turn.completion_tokens
        routed = await self._route(output.action, index)
        advice, advised = (Advice(), []) if routed.interrupted else self._advise(routed, output.action)
        step = Step(index=len(self.state.steps), context_digest=context_digest, action=routed.executed or output.action,
                    results=routed.results, planner=output.turn, retrieved=routed.retrieved,
                    notices=prefix_notices + routed.notices + advice.notices,
                    started_at=started_at, duration_s=time.monotonic() - t0, children=routed.children,
                    interventions=_once(routed.interventions + advised), **seen)
        feedback = self.state.feedback(step.results, routed.notices + advice.notices)
        await self._record(step, output.turn.raw or output.action.model_dump_json(), feedback)
        logger.info("step %d: %s", index, output.action.kind)
        return self._outcome(routed, advice)

    @staticmethod
    def _outcome(routed: Routed, advice: Advice) -> StepOutcome:
        """The routed action's stop first, then a policy's; else the follow-ups, else go on."""
        if routed.stop:
            return Stopped(routed.stop, routed.stop_detail)
        if advice.stop:
            return Stopped(advice.stop.reason, advice.stop.detail)
        if advice.followups:
            return FollowUps(advice.followups, prefix_changed=routed.prefix_changed)
        return Continue(prefix_changed=routed.prefix_changed)

    async def _route(self, action: Action, index: int) -> Routed:
        if action.kind not in self.state.offered:  # a planner need not have honoured the grammar
            return Routed(results=[ToolResult.failure("not_allowed", f"{action.kind} is not available here")])
        if isinstance(action, ToolCallAction):
            return await self._batch(action)
        if isinstance(action, (Finish, AskUser, Refuse, Delegate)):
            by, held = next(((p, h) for p in self.state.policies if (h := p.on_stop(action, self.state)) is not None),
                            (None, None))
            if held is not None:
                self.state.harness_said.add(held.message)
                # a hold that says more than its error does so as a notice of its policy (policy, code)
                notices = [Notice.of(held.notice, policy=by.name, code=held.code)] if held.notice and by else []
                return Routed(results=[ToolResult.failure(held.code, held.message)], notices=notices,
                              interventions=[by.name] if by else [])
        if isinstance(action, Finish):
            return Routed(stop="finish", stop_detail=action.summary)
        if isinstance(action, AskUser):
            return Routed(stop="ask_user", stop_detail=action.question)
        if isinstance(action, Refuse):
            return Routed(stop="refuse", stop_detail=action.reason)
        if isinstance(action, MemorySearch):
            assert self.deps.memory is not None  # memory_search is offered only with a memory
            return await actions.memory_search(self.deps.memory, action)
        if isinstance(action, MemoryWrite):
            assert self.deps.memory is not None
            return await actions.memory_write(self.deps.memory, action, episode_id=self.state.header.episode_id, index=index)
        if isinstance(action, LoadSkill):
            return actions.load_skill(action, self.state.loadable(), lambda name: self.state.apply_skill(name, gates=True))
        if isinstance(action, Delegate):
            return await self._observed_delegate(action)
        raise AssertionError(f"unrouted action kind {action.kind}")  # pragma: no cover

    def _advise(self, routed: Routed, action: Action, *, by_harness: bool = False) -> tuple[Advice, list[str]]:
        """Every policy's advice on the routed step, merged in policy order, and the names of the
        policies whose advice was not empty.
        """
        report = StepReport(index=len(self.state.steps), action=routed.executed or action, calls=routed.calls,
                            results=routed.results, held=routed.held, by_harness=by_harness)
        merged, advised = Advice(), []
        for policy in self.state.policies:
            advice = policy.after_step(report, self.state)
            if advice is None:
                continue
            if advice.notices or advice.followups or advice.withhold or advice.stop is not None:
                advised.append(policy.name)
            merged.notices += [Notice.of(n, policy=policy.name, code="advice") for n in advice.notices]
            merged.followups += [c for c in advice.followups if c not in merged.followups]
            merged.withhold |= advice.withhold
            merged.stop = merged.stop or advice.stop
        self.state.withheld |= merged.withhold
        return merged, advised

    async def _batch(self, action: ToolCallAction) -> Routed:
        step, eid = len(self.state.steps), self.state.header.episode_id

        def call_id(i: int) -> str:
            return f"call_{eid[:12]}_{step}_{i}"

        def started(call: ToolCall, i: int) -> None:
            self.state.emit(CallStarted(episode_id=eid, step=step, call_id=call_id(i), call=call,
                                        spec=spec_for_call(self.state.tools, call)))

        def ended(call: ToolCall, i: int, result: ToolResult | None, exc: BaseException | None) -> None:
            self.state.emit(CallEnded(episode_id=eid, step=step, call_id=call_id(i), call=call, result=result,
                                      error=str(exc) if exc else None, error_type=type(exc).__name__ if exc else None))

        return await run_batch(action, policies=self.state.policies, tools=self.state.tools, run=self.state,
                               execute=lambda call, i: self._execute(call), started=started, ended=ended,
                               said=self.state.harness_said)

    async def _execute(self, call: ToolCall) -> ToolResult:
        """The executor's call, or the harness's own widening tool (decided by the policies like any call)."""
        more = self.state.exposure.more_tools if self.state.exposure is not None else None
        if more is not None and call.name == more.name:
            return self.state.widen(str(call.arguments.get("query", "")))
        return await self.deps.executor.call(call)

    async def _harness_step(self, calls: list[ToolCall], index: int) -> Stopped | None:
        """Run held calls in a step of their own, recorded like any step but with no planner turn."""
        action = ToolCallAction(calls=calls)
        started_at, t0 = utcnow(), time.monotonic()
        routed = await self._batch(action)
        if routed.interrupted and routed.stop:
            return Stopped(routed.stop, routed.stop_detail)
        advice, advised = self._advise(routed, action, by_harness=True)
        step = Step(index=len(self.state.steps), context_digest="", action=routed.executed or action, results=routed.results,
                    notices=[Notice(f"run by the harness after step {index + 1}'s results met its precondition",
                                    policy="harness", code="harness_step"),
                             *routed.notices, *advice.notices],
                    started_at=started_at, duration_s=time.monotonic() - t0,
                    interventions=_once(routed.interventions + advised))
        await self._record(step, action.model_dump_json(), self.state.feedback(step.results, routed.notices + advice.notices))
        return Stopped(advice.stop.reason, advice.stop.detail) if advice.stop is not None else None

    async def _plan(self, request: PlanRequest, remaining: float) -> PlannerOutput:
        """Ask the planner within the remaining wall time, telling the observer either way."""
        step, eid = len(self.state.steps), self.state.header.episode_id
        self.state.emit(PlanStarted(episode_id=eid, step=step, planner=self.deps.planner.info))
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for returns the result of a plan that
            # completed in the same loop turn as a Ctrl-C, and the cancellation is lost.
            async with asyncio.timeout(remaining):
                output = await self.deps.planner.plan(request)
        except (TimeoutError, PlannerError) as exc:
            turn = getattr(exc, "turn", None)
            self.state.emit(PlanEnded(episode_id=eid, step=step, turn=turn if isinstance(turn, PlannerTurn) else None,
                                      error=str(exc) or "wall-time budget exhausted", error_type=type(exc).__name__))
            raise
        self.state.emit(PlanEnded(episode_id=eid, step=step, turn=output.turn))
        return output

    async def _observed_delegate(self, action: Delegate) -> Routed:
        """The hand-off, told to the observer: the sub-agent's run nests in it."""
        step, eid = len(self.state.steps), self.state.header.episode_id
        call_id = f"delegate_{eid[:12]}_{step}"
        self.state.emit(DelegateStarted(episode_id=eid, step=step, call_id=call_id, action=action))
        try:
            state = self.state
            brief = state.brief(action)  # None: the delegate as the planner wrote it
            given, tools = (brief.action, brief.tools) if brief is not None else (action, state.delegable())
            reads = actions.READS_BUDGET if state.setup.handoff is not None and state.setup.handoff.settings.hand_back_reads else 0
            routed = await actions.delegate(given, lambda a: self.deps.spawn_child(a, tools, state.gates, state.steps),
                                            episode_id=eid, step=step, request=brief.message if brief else None,
                                            reads_budget=reads)
            if brief is not None:  # the step records what the child got; the parent hears what was dropped
                routed.notices[:0] = brief.notices
                routed.executed = given if given != action else routed.executed
        except Exception as exc:
            self.state.emit(DelegateEnded(episode_id=eid, step=step, call_id=call_id, error=f"{type(exc).__name__}: {exc}"))
            raise
        self.state.emit(DelegateEnded(episode_id=eid, step=step, call_id=call_id,
                                      result=routed.results[0] if routed.results else None))
        return routed

    # ------------------------------------------------------------------ record and end

    async def _record(self, step: Step, assistant: str, feedback: str) -> None:
        self.state.steps.append(step)
        self.state.history.append([ChatMessage(role="assistant", content=assistant, step=step),
                                   ChatMessage(role="tool", content=feedback, step=step)])
        if self.state.writer:
            await self.state.writer.step(step)
        if self.deps.on_step is not None:
            self.deps.on_step(step)

    async def _parse_failure(self, context_digest: str, exc: PlannerOutputError, started_at: Any, t0: float,
                             seen: dict[str, Any]) -> None:
        self.state.parse_failures += 1
        turn = exc.turn if isinstance(exc.turn, PlannerTurn) else PlannerTurn(raw=exc.raw, finish_reason="error")
        self.state.tokens += turn.prompt_tokens_evaluated + turn.completion_tokens
        error = ToolError(code="invalid_action", message=exc.reason)
        notice = Notice("Your last output was not a valid action. Reply with exactly one JSON action as described.",
                        policy="harness", code="invalid_action")
        step = Step(index=len(self.state.steps), context_digest=context_digest, planner=turn, error=error, notices=[notice],
                    started_at=started_at, duration_s=time.monotonic() - t0, **seen)
        await self._record(step, exc.raw, json.dumps({"error": error.model_dump(), "notices": [notice]}))

    async def finish(self, reason: StopReason, detail: str, *, run_verifier: bool = True) -> Episode:
        episode = Episode(header=self.state.header, steps=self.state.steps, stop_reason=reason, stop_detail=detail,
                          ended_at=utcnow())
        if run_verifier and self.deps.verifier is not None:
            verdict = await self.deps.verifier(episode)
            if not isinstance(verdict, Verdict):
                raise UsageError(f"verifier returned {type(verdict).__name__}, not a Verdict")
            episode = episode.model_copy(update={"verdict": verdict})
        self.state.ended = True  # set before the write: a cancelled end line is still finished by its thread
        self.state.emit(RunEnded(episode_id=self.state.header.episode_id, episode=episode))
        if self.state.writer:
            await self.state.writer.end(episode)
            self.state.writer.close()
        if run_verifier and self.deps.memory is not None and self.state.cfg.capture_episodes:
            try:
                await self.deps.memory.capture_episode(episode)
            except MemoryStoreError:
                logger.exception("capturing episode %s into memory failed", self.state.header.episode_id)
        return episode


def _once(names: list[str]) -> list[str]:
    """``names`` without repeats, in first-seen order."""
    return list(dict.fromkeys(names))
