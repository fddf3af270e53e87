"""A refusal or hand-off right after a fixable tool step is sent back once.

Two cases, once per run, seen in the 1.5B planner's traces: a gate held a call only so the
planner could read a result first, and the planner read the hold as a failure and refused or
handed off; or a call failed on its arguments (a date written "March 9", a year guessed
wrong) and the planner refused although the error said how to fix it. A refusal is for
requests that must not be carried out, which neither is. A refusal with no failed call before
it always stands.

A refusal sent back after a fixable error is not offered in the next step: asked to fix the
call, the 1.5B answered with the same refusal, which then stood (dev traces, a unit the
converter lacks: three refusals where the converter skill's route was one call away). Where an
in-force procedure names the route for that error code, the next step offers no question to
the user either (told "or ask_user", the planner asked the user for the conversion factor the
procedure gave); otherwise it can still ask, or finish saying what it could not do.
"""

from __future__ import annotations

from ...contracts import Refuse, Step, ToolCallAction, ToolSpec
from ._text import call_text
from .base import Advice, BasePolicy, Hold, RunView, StepReport, StopAction
from .gates import held_result, ready_calls

__all__ = ["SendBack"]

FIXABLE = frozenset({"invalid_arguments", "not_found", "precondition_failed"})
"""Error codes whose message says how to go on for any tool (a gate's says what must come
first); a tool adds its own in ``ToolSpec.fixable_errors``."""


def _fixable(code: str, spec: ToolSpec | None) -> bool:
    return code in FIXABLE or (spec is not None and code in spec.fixable_errors)


def _last_tool_step(run: RunView) -> tuple[Step | None, set[str]]:
    """The last step if it called tools, and the calls harness steps after it ran.

    Past a harness step that held nothing (it ran sequenced calls), the planner's step before
    it is the one the planner is answering.
    """
    steps, ran_after = list(run.steps), set()
    while steps and isinstance(steps[-1].action, ToolCallAction):
        step = steps[-1]
        if step.planner is None and len(steps) > 1 and not any(held_result(r) for r in step.results):
            ran_after.update(c.key() for c in step.action.calls)
            steps.pop()
            continue
        return step, ran_after
    return None, ran_after


class SendBack(BasePolicy):
    """Send a refusal or hand-off back once when the step before it only needs the planner to go on."""

    name = "send_back"

    def __init__(self) -> None:
        super().__init__()
        self._used = False
        self._withheld: frozenset[str] = frozenset()
        """What the step after a refusal sent back for a fixable error does not offer."""

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        withheld, self._withheld = self._withheld, frozenset()
        return Advice(withhold=withheld) if withheld else None

    def on_stop(self, action: StopAction, run: RunView) -> Hold | None:
        if self._used or action.kind not in ("refuse", "delegate"):
            return None
        previous, ran_after = _last_tool_step(run)
        if previous is None or not isinstance(previous.action, ToolCallAction):
            return None
        held = [c for c, r in zip(previous.action.calls, previous.results, strict=False)
                if held_result(r) and c.key() not in ran_after]
        ready, _ = ready_calls(held, run.gates, run.gate_history) if held else ([], [])
        if ready:
            self._used = True
            return Hold("not_allowed", (
                f"{action.kind} is not needed here: nothing failed. {'; '.join(call_text(c) for c in ready)} only "
                "waited for the result you have now. If the request still needs it, send it as your next tool_call; "
                "otherwise finish."
            ))
        pairs = [(c, r.error) for c, r in zip(previous.action.calls, previous.results, strict=False)
                 if r.error is not None and _fixable(r.error.code, run.tools.get(c.name))]
        if not pairs or not isinstance(action, Refuse):
            return None
        self._used = True
        call, failed = pairs[0]
        detail = failed.message
        if failed.code == "precondition_failed":
            # what the gate says *now*, with the batch's results in: "a cast is running: stop it
            # first" rather than the batch-ordering message the call was held with
            detail = next((m for g in run.gates if (m := g.check(call, [call], run.gate_history))), detail)
        said = ("refuse is for requests that must not be carried out; this one only hit a fixable error "
                f"({failed.code}: {detail}).")
        procedure = _procedure_for(run, failed.code)
        if procedure:
            # the route is known: pointing at the user as well got a question that quoted it back
            self._withheld = frozenset({"refuse", "ask_user"})
            return Hold("not_allowed", f"{said} Your procedure says: {procedure} Do that next.")
        self._withheld = frozenset({"refuse"})
        return Hold("not_allowed", f"{said} Do what the error says and call again, or ask_user if you need "
                                   "information only the user has.")


def _procedure_for(run: RunView, code: str) -> str | None:
    """The line of an in-force skill procedure that says what to do on error ``code``.

    Skills write their recovery routes into their procedures ("if it fails with
    unsupported_unit, ... use calculate with the standard factor"); a planner that refused after
    that error gets the line again at the moment it applies.
    """
    for entry in run.guidance:
        for line in entry.splitlines():
            if code in line:
                return line.split("] ", 1)[-1].strip()
    return None
