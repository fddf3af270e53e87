"""After the same call has failed a few times, the planner is told to stop guessing that variation."""

from __future__ import annotations

from collections import Counter

from ...contracts import Notice
from .base import Advice, BasePolicy, RunView, StepReport

__all__ = ["REPEATED_FAILURE", "RepeatFailure"]

REPEATED_FAILURE = "repeated_failure"
"""The code of this policy's notice: what readers (the failure diagnosis) match, never its words."""


class RepeatFailure(BasePolicy):
    """Notice once an identical call (name and arguments) has failed ``limit`` times.

    Args:
        limit: failures of one exact call before the notice.
    """

    name = "repeat_failure"

    def __init__(self, *, limit: int = 2) -> None:
        if limit < 1:
            raise ValueError("repeat_failure limit must be >= 1")
        super().__init__(limit=limit)
        self.limit = limit
        self._failures: Counter[str] = Counter()

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        notices = []
        for call, result in zip(report.calls, report.results, strict=False):
            if result.ok:
                continue
            self._failures[call.key()] += 1
            n = self._failures[call.key()]
            if n >= self.limit:
                notices.append(Notice(
                    f"{call.name} with these exact arguments has failed {n} times. "
                    "Stop guessing this variation: change the arguments, use another tool, or ask_user.",
                    policy=self.name, code=REPEATED_FAILURE,
                ))
        return Advice(notices=notices) if notices else None
