"""A delegation the planner already got a confirmed result for is held, not run again.

A small planner that delegated part of a request and got a confirmed result back sometimes
delegates the very same thing again, step after step: on a dev hand-off task the 1.5B sent one
confirmed delegation nine more times until max_steps, with the loop guard's notice after each
(a notice the planner did not act on, and each repeat started a sub-agent that redid the work).
This policy holds such a repeat before a sub-agent starts: the planner is told the step whose
result it already has, with that result's answer, artifacts and summary, and to go on from
there.

A delegation is the same when its instruction (whitespace and case aside), its tools (order
aside) and its artifacts are, as the planner wrote them: a delegation with other values hands
over other work (the same part of a request for another record), and what the harness adds to
a delegate (η's ``delegation`` brief: tools closed over their apps, carried ids) does not make
two of the planner's delegations differ. Only a confirmed result counts: a repeat of a
delegation that was not confirmed is a retry, which the hand-off's own result already speaks to.
"""

from __future__ import annotations

import json
from typing import Any

from ...contracts import Delegate
from .base import Advice, BasePolicy, Hold, RunView, StepReport, StopAction

__all__ = ["ALREADY_DELEGATED", "RepeatDelegation"]

ALREADY_DELEGATED = "already_delegated"
"""The held step's error code (and its notice's): what readers match, never its words."""

_SHOWN = ("answer", "artifacts", "summary")
"""The fields of the earlier result the hold repeats, in this order."""


def _key(action: Delegate) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]]:
    return (" ".join(action.instruction.split()).casefold(), tuple(sorted(set(action.tools))),
            tuple(sorted(action.artifacts.items())))


class RepeatDelegation(BasePolicy):
    """Hold a delegation identical to one whose result was confirmed; point to that result.

    Args:
        shown_chars: most characters of the earlier result the hold repeats.
    """

    name = "repeat_delegation"

    def __init__(self, *, shown_chars: int = 400) -> None:
        if shown_chars < 0:
            raise ValueError("repeat_delegation shown_chars must be >= 0")
        super().__init__(shown_chars=shown_chars)
        self.shown_chars = shown_chars
        self._confirmed: dict[tuple[Any, ...], tuple[int, dict[str, Any]]] = {}
        """Each confirmed delegation as the planner wrote it: its step and its result's data."""
        self._pending: tuple[Any, ...] | None = None
        """The delegation let through in the step being routed (its result comes in after_step)."""

    def on_stop(self, action: StopAction, run: RunView) -> Hold | None:
        if not isinstance(action, Delegate):
            return None
        key = _key(action)
        earlier = self._confirmed.get(key)
        if earlier is None:
            self._pending = key
            return None
        step, data = earlier
        shown = {k: data[k] for k in _SHOWN if data.get(k)}
        text = json.dumps(shown, ensure_ascii=False, default=str)
        if len(text) > self.shown_chars:
            text = text[: self.shown_chars] + "…"
        return Hold(ALREADY_DELEGATED,
                    f"Step {step + 1} already delegated exactly this and its result was confirmed: {text}. The harness "
                    "does not run it again. Use that result: do the part of the request that is still missing, or "
                    "finish if it is all done.")

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        key, self._pending = self._pending, None
        if key is None or not isinstance(report.action, Delegate) or report.by_harness:
            return None
        result = report.results[0] if report.results else None
        if result is not None and result.ok and isinstance(result.data, dict) and result.data.get("confirmed"):
            self._confirmed.setdefault(key, (report.index, result.data))
        return None
