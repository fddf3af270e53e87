"""Gates hold calls whose precondition is unmet; held calls are then spelled out or sequenced.

:class:`Gates` is a safety policy: the hard preconditions skills and apps declare hold in
every mode. :class:`HeldCalls` is what makes a hold recoverable for a small planner, which
rarely recovers from an abstract precondition message (it turned to memory writes,
delegation or refusal instead): the gates are re-checked with the step's results in, and the
first held call that would pass now is written out as the next call. A call held only
because its prerequisite sat in the same batch may instead be run by the harness right after
the batch, when every gate that held it is objective (verifies its precondition from results,
"no cast is active") and passes on the real results: the planner's call stands, only its
order is fixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...contracts import Notice, Step, ToolCall, ToolCallAction, ToolResult, ToolSpec
from ...skills.base import ChecksInBatch, ObjectiveGate, RepairsCalls, ToolGate
from ._text import call_text
from .base import ALLOW, Advice, BasePolicy, CallDecision, Hold, RunView, StepReport

__all__ = ["Gates", "HeldCalls", "ready_calls"]

DETOURS = frozenset({"memory_search", "memory_write", "load_skill", "delegate"})


def _blocking(gates: Sequence[ToolGate], call: ToolCall, batch: Sequence[ToolCall], history: Sequence[Any]) -> str | None:
    return next((m for g in gates if (m := g.check(call, batch, history))), None)


def ready_calls(held: Sequence[ToolCall], gates: Sequence[ToolGate], history: Sequence[Any]) -> tuple[list[ToolCall], list[str]]:
    """Held calls that would pass now (a gate's repair of one counts), and why the others still don't."""
    ready: list[ToolCall] = []
    blocked: list[str] = []
    for c in held:
        if _blocking(gates, c, [c], history) is None:
            ready.append(c)
            continue
        # a guessed id next to the call that created the object: suggest the returned one
        fixes = [g.repair(c, history) for g in gates if isinstance(g, RepairsCalls)]
        fixed = next((f for f in fixes if f is not None and _blocking(gates, f, [f], history) is None), None)
        if fixed is not None:
            ready.append(fixed)
        else:
            why = _blocking(gates, c, [c], history) or ""
            blocked.append(f"{c.name} ({why})" if why else c.name)
    return ready, blocked


def with_step(run: RunView, report: StepReport) -> list[Step]:
    """The gates' evidence with this step's results in, as if it were recorded already."""
    action = report.action if isinstance(report.action, ToolCallAction) else ToolCallAction(calls=list(report.calls))
    provisional = Step(index=report.index, context_digest="", action=action, results=list(report.results))
    return [*run.gate_history, provisional]


class Gates(BasePolicy):
    """Hold a call while a gate in force says its precondition is missing."""

    name = "gates"
    safety = True

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        missing = _blocking(run.gates, call, batch, run.gate_history)
        return Hold("precondition_failed", f"{call.name}: {missing}") if missing else ALLOW


class HeldCalls(BasePolicy):
    """Spell out the next call after a hold; optionally run sequencing holds and keep the planner on them.

    Args:
        sequence: run a call held only for its batch after the batch (objective gates only).
        focus: when a held call could run now, the next step is offered no detour (memory,
            skills, delegation): the traces show a memory search, then a question, instead.
    """

    name = "held_calls"

    def __init__(self, *, sequence: bool = True, focus: bool = True) -> None:
        super().__init__(sequence=sequence, focus=focus)
        self.sequence, self.focus = sequence, focus

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        if not report.held:
            return None
        advice = Advice()
        after = with_step(run, report)
        followups = self._sequenced(report, run, after) if self.sequence else []
        if followups:
            advice.followups = followups
            advice.notices.append(Notice(
                f"{', '.join(c.name for c in followups)} had to wait for the result of the other calls; "
                "the harness runs it next, as asked, now that its precondition is met.",
                policy=self.name, code="sequenced",
            ))
        held = [c for c in report.held if c not in followups]
        if not held:
            return advice
        ready, blocked = ready_calls(held, run.gates, after)
        parts = []
        if ready:
            # One call at a time, in the planner's own order: the user may have asked for an
            # order ("do not disturb first, then dim"), and a batch would lose it again.
            first, rest = ready[0], [c.name for c in ready[1:]]
            ran = ", ".join(dict.fromkeys(c.name for c in report.calls if c not in report.held and c not in followups))
            ran = ran or "earlier steps"
            then = f", then {', '.join(rest)} in later steps" if rest else ""
            parts.append(
                f"Not run yet (nothing failed): {', '.join(c.name for c in ready)} waited for the result of "
                f"{ran}, which is here now. Read it: if the request still needs them, call {call_text(first)} "
                f"next{then}; if not, leave them out."
            )
            if self.focus:
                advice.withhold = DETOURS
        if blocked:
            parts.append(f"Not run: {'; '.join(blocked)}.")
        advice.notices.append(Notice(" ".join(parts), policy=self.name, code="held_until_ready"))
        return advice

    @staticmethod
    def _sequenced(report: StepReport, run: RunView, after: Sequence[Step]) -> list[ToolCall]:
        """Held calls whose every blocking gate is objective (or settled in the batch) and passes now."""
        before = list(run.gate_history)
        ran = list(zip(report.calls, report.results, strict=True))
        out = []
        for c in report.held:
            blocking = [g for g in run.gates if g.check(c, report.calls, before)]
            settled = all(
                (isinstance(g, ObjectiveGate) and g.objective) or (isinstance(g, ChecksInBatch) and g.checked_in_batch(c, ran))
                for g in blocking
            )
            if blocking and settled and not any(g.check(c, [c], after) for g in run.gates):
                out.append(c)
        return out


def held_result(result: ToolResult) -> bool:
    """A result that is a gate's hold (nothing ran)."""
    return result.error is not None and result.error.code == "precondition_failed"
