"""Calls that need the user's yes ask for it: the last word on every call, in every mode.

Which calls ask is decided by their declared semantics, never their names (destructive, or
effect send, delete or purchase: ``ToolSpec.needs_confirmation``), and for a UI action on a
device by what it would hit (a tap on "Send" is a send). It runs after every other policy,
so the user is asked only about calls that would otherwise run.

A denial ends the run once the step is recorded (``on_denial="stop"``, the default): the user
said no, or nobody could be asked, and what the planner does next is either a reworded
refusal that costs a whole decode or another route to the same effect. The denied call is still
recorded as a failed result first, so the trace, the hand-off review and a parent agent see
exactly what was refused. ``on_denial="hold"`` lets the planner go on with the denial as
feedback instead (an app that wants the agent to do the rest of a request without the refused
part); every later route to the same effect still asks, and is denied, again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ...contracts import Delegate, ToolCall, ToolSpec
from .base import ALLOW, Advice, Allow, BasePolicy, CallDecision, Hold, RunView, StepReport, Stop

__all__ = ["Confirmation", "OnDenial"]

OnDenial = Literal["stop", "hold"]


class Confirmation(BasePolicy):
    """Ask the session's confirmation policy about calls that need confirmation."""

    name = "confirmation"
    safety = True

    def __init__(self, *, on_denial: OnDenial = "stop") -> None:
        if on_denial not in ("stop", "hold"):
            raise ValueError(f"on_denial must be 'stop' or 'hold', not {on_denial!r}")
        super().__init__(on_denial=on_denial)
        self._stop = on_denial == "stop"
        self._denied: list[str] = []

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        effective, detail = await run.effect_of(call, spec)
        if not effective.needs_confirmation:
            return ALLOW
        allowed, reason = await run.confirm(call, effective)
        what = f"{call.name} is {effective.effect_label()}{f' ({detail})' if detail else ''}"
        if not allowed:
            self._denied.append(f"{what}: not confirmed ({reason})")
            return Hold(
                "confirmation_denied",
                f"{what}: it changes something that cannot be undone and was not confirmed ({reason})",
                notice=f"confirmation denied for {what}: {reason}",
            )
        return Allow(notice=f"confirmation granted for {what}: {reason}")

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        denied, self._denied = self._denied, []
        if not self._stop:
            return None
        if isinstance(report.action, Delegate):  # a sub-agent's denial is the user's no to this run too
            denied += [f"sub-agent: {r.data.get('summary', '')}" for r in report.results
                       if isinstance(r.data, dict) and r.data.get("stop_reason") == "denied"]
        return Advice(stop=Stop("denied", "; ".join(denied))) if denied else None
