"""One tool batch: every call is decided by the policies in order, then the allowed ones run together.

Deciding first and running after keeps the user's confirmations in the planner's order and
lets a rewrite reach the gates before they judge the call. Running is the executor's
business: calls of one batch are started together, and a world that is not thread-safe
serialises them itself (``ToolRegistry(concurrent=False)``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence

from ..contracts import Notice, ToolCall, ToolCallAction, ToolResult, ToolSpec, spec_for_call
from ..errors import ExecutorError
from .policies import Allow, Hold, Policy, Rewrite, RunView, Stop
from .routed import Routed

__all__ = ["run_batch"]

Execute = Callable[[ToolCall, int], Awaitable[ToolResult]]
Decided = Callable[[ToolCall, int, ToolResult | None], None]


async def _decide(call: ToolCall, calls: list[ToolCall], i: int, policies: Sequence[Policy],
                  tools: Mapping[str, ToolSpec], run: RunView, notices: list[Notice],
                  acted: list[str]) -> ToolResult | Stop | None:
    """None to run ``calls[i]`` (possibly rewritten in place), the failed result that holds it, or a Stop.

    ``acted`` collects the names of the policies whose decision changed anything (anything but
    a bare Allow), once each.
    """
    spec = spec_for_call(tools, call)  # the call's semantics: an argument may select its effect
    if spec is None:
        return ToolResult.failure("unknown_tool", f"{call.name!r} is not exposed; use one of: {', '.join(tools)}")
    for policy in policies:
        decision = await policy.before_call(call, spec, calls, run)
        if not (isinstance(decision, Allow) and not decision.notice) and policy.name not in acted:
            acted.append(policy.name)
        if isinstance(decision, Rewrite):
            notices.append(Notice.of(decision.notice, policy=policy.name, code="rewritten"))
            call = calls[i] = decision.call
            spec = spec_for_call(tools, call) or spec
        elif isinstance(decision, Hold):
            if decision.notice:
                notices.append(Notice.of(decision.notice, policy=policy.name, code=decision.code))
            return ToolResult.failure(decision.code, decision.message)
        elif isinstance(decision, Stop):
            return decision
        elif isinstance(decision, Allow) and decision.notice:
            notices.append(Notice.of(decision.notice, policy=policy.name, code="allowed"))
    return None


async def run_batch(
    action: ToolCallAction,
    *,
    policies: Sequence[Policy],
    tools: Mapping[str, ToolSpec],
    run: RunView,
    execute: Execute,
    started: Callable[[ToolCall, int], None],
    ended: Callable[[ToolCall, int, ToolResult | None, BaseException | None], None],
    said: set[str],
) -> Routed:
    """Decide and run one batch; ``said`` collects the messages of results the harness produced.

    A policy's Stop, or a device lost while the calls ran, ends the run: the batch returns a
    halted :class:`Routed` at that point, with nothing after it decided or run.
    """
    calls = list(action.calls)
    out = Routed()
    decided: list[ToolResult | None] = []
    for i, call in enumerate(calls):
        started(call, i)
        held = await _decide(call, calls, i, policies, tools, run, out.notices, out.interventions)
        if isinstance(held, Stop):
            return Routed.halt(held.reason, held.detail, out.interventions)
        if held is not None and held.error is not None:
            said.add(held.error.message)  # the harness's own words ground nothing
            ended(calls[i], i, held, None)
        decided.append(held)
    todo = [i for i, d in enumerate(decided) if d is None]
    gathered = await asyncio.gather(*(execute(calls[i], i) for i in todo), return_exceptions=True)
    results: list[ToolResult | None] = list(decided)
    for i, item in zip(todo, gathered, strict=True):
        if isinstance(item, BaseException):
            ended(calls[i], i, None, item)
            if isinstance(item, ExecutorError):
                return Routed.halt("device_lost", f"{calls[i].name}: {item}", out.interventions)
            raise item
        ended(calls[i], i, item, None)
        results[i] = item
    out.results = [r for r in results if r is not None]
    out.calls = calls
    out.held = [c for c, r in zip(calls, out.results, strict=False)
                if r.error is not None and r.error.code == "precondition_failed"]
    if calls != list(action.calls):
        out.executed = action.model_copy(update={"calls": calls})
    return out
