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
two of the planner's delegations differ. By default only a confirmed result counts: a repeat
of a delegation that was not confirmed is a retry, which the hand-off's own result already
speaks to.

A retry can be no retry at all. On dev and test hand-off tasks the planner sent one unconfirmed
delegation again and again, and each greedy sub-agent made the very same calls, met the very
same outcomes and ended on the same question, which nobody answered. With ``unconfirmed`` on,
a delegation is held once its two latest runs both went unconfirmed with children that did
the same thing (the same calls, arguments and order, each with the same outcome): the phone
reproduced the child, so a third run would too. What the children did is read from the
sub-agents' episodes the run records on those steps, so the hand-off result the planner reads
carries nothing new. That hold has its own code (``repeated_unconfirmed``): the loop guard
reads ``already_delegated`` as a repeat whose earlier run worked, and this one's did not.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...contracts import Delegate, Episode
from .base import Advice, BasePolicy, Hold, RunView, StepReport, StopAction

__all__ = ["ALREADY_DELEGATED", "REPEATED_UNCONFIRMED", "RepeatDelegation"]

ALREADY_DELEGATED = "already_delegated"
"""The held step's error code (and its notice's): what readers match, never its words."""

REPEATED_UNCONFIRMED = "repeated_unconfirmed"
"""The error code of a repeat held because its earlier runs went unconfirmed the same way."""

_SHOWN = ("answer", "artifacts", "summary")
"""The fields of the earlier result the hold repeats, in this order."""


def _key(action: Delegate) -> tuple[str, tuple[str, ...], tuple[tuple[str, str], ...]]:
    return (" ".join(action.instruction.split()).casefold(), tuple(sorted(set(action.tools))),
            tuple(sorted(action.artifacts.items())))


def _did(children: Sequence[Episode]) -> tuple[tuple[str, str], ...]:
    """What the sub-agents of one step did: each tool call (name and arguments), in order, with
    its outcome (ok or the error code).
    """
    return tuple((call.key(), "failed" if result is None else "ok" if result.ok else
                  result.error.code if result.error else "failed")
                 for child in children for _, call, result in child.tool_calls())


class RepeatDelegation(BasePolicy):
    """Hold a delegation identical to one whose result was confirmed; point to that result.

    Args:
        shown_chars: most characters of the earlier result the hold repeats.
        unconfirmed: also hold a delegation whose two latest runs went unconfirmed with children
            that did the same thing.
    """

    name = "repeat_delegation"

    def __init__(self, *, shown_chars: int = 400, unconfirmed: bool = False) -> None:
        if shown_chars < 0:
            raise ValueError("repeat_delegation shown_chars must be >= 0")
        if not isinstance(unconfirmed, bool):
            raise TypeError(f"repeat_delegation unconfirmed must be true or false, not {unconfirmed!r}")
        # off, the parameters read as before it existed: trace headers and η's policy sets unchanged
        super().__init__(shown_chars=shown_chars, **({"unconfirmed": True} if unconfirmed else {}))
        self.shown_chars, self.unconfirmed = shown_chars, unconfirmed
        self._confirmed: dict[tuple[Any, ...], tuple[int, dict[str, Any]]] = {}
        """Each confirmed delegation as the planner wrote it: its step and its result's data."""
        self._retried: dict[tuple[Any, ...], list[int]] = {}
        """With ``unconfirmed``: the steps of each delegation's unconfirmed runs, oldest first."""
        self._pending: tuple[Any, ...] | None = None
        """The delegation let through in the step being routed (its result comes in after_step)."""

    def on_stop(self, action: StopAction, run: RunView) -> Hold | None:
        if not isinstance(action, Delegate):
            return None
        key = _key(action)
        earlier = self._confirmed.get(key)
        if earlier is None:
            held = self._reproduced(key, run)
            if held is None:
                self._pending = key
            return held
        step, data = earlier
        text = self._shown({k: data[k] for k in _SHOWN if data.get(k)})
        return Hold(ALREADY_DELEGATED,
                    f"Step {step + 1} already delegated exactly this and its result was confirmed: {text}. The harness "
                    "does not run it again. Use that result: do the part of the request that is still missing, or "
                    "finish if it is all done.")

    def _reproduced(self, key: tuple[Any, ...], run: RunView) -> Hold | None:
        """The hold for a delegation whose two latest runs went unconfirmed the same way (None: none)."""
        ran = [run.steps[i] for i in self._retried.get(key, ()) if i < len(run.steps) and run.steps[i].children]
        if len(ran) < 2 or _did(ran[-2].children) != _did(ran[-1].children):
            return None
        last = ran[-1]
        data = last.results[0].data if last.results and isinstance(last.results[0].data, dict) else {}
        said = self._shown({k: data[k] for k in ("stop_reason", "summary") if data.get(k)})
        return Hold(REPEATED_UNCONFIRMED,
                    f"Steps {ran[-2].index + 1} and {last.index + 1} delegated exactly this, and neither result was "
                    f"confirmed: the sub-agent made the same calls with the same outcomes both times and ended "
                    f"with {said}. Run again on the same phone it would do the same, so the harness does not run it. "
                    "Do that part yourself with your own tools, delegate something different, or ask_user.")

    def _shown(self, fields: dict[str, Any]) -> str:
        text = json.dumps(fields, ensure_ascii=False, default=str)
        return text[: self.shown_chars] + "…" if len(text) > self.shown_chars else text

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        key, self._pending = self._pending, None
        if key is None or not isinstance(report.action, Delegate) or report.by_harness:
            return None
        result = report.results[0] if report.results else None
        if result is not None and result.ok and isinstance(result.data, dict) and result.data.get("confirmed"):
            self._confirmed.setdefault(key, (report.index, result.data))
        elif self.unconfirmed:
            self._retried.setdefault(key, []).append(report.index)
        return None
