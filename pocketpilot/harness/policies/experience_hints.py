"""Step-level experience: after a failed call, how an earlier verified run got past the same situation.

The experience library in η (:mod:`pocketpilot.adapters.experience`) keeps, beside each
workflow, its step-level cases: the last call and how it ended, then the calls that worked
next. The adapter retrieves the entries for a request and hands their cases to this policy;
when a call of this run ends with the same tool and error code, the planner is told the
action that worked then, with its values as slots (never the earlier run's values). It is
put in force only where η holds experience and its switch is on, so a run under η without
entries is unchanged.
"""

from __future__ import annotations

from typing import Any

from ...adapters.experience import StepCase, render_step_hint
from ...contracts import Notice
from .base import Advice, BasePolicy, RunView, StepReport

__all__ = ["EXPERIENCE_HINT", "ExperienceHints"]

EXPERIENCE_HINT = "experience_hint"
"""The code of this policy's notice."""


class ExperienceHints(BasePolicy):
    """Notice, once per (tool, code), the action that worked after the same failure in a verified run.

    Args:
        cases: step cases (``StepCase`` dumps) of the entries retrieved for the request.
        entries: ids of those entries (recorded with the policy in the trace header).
        library: digest of η's experience library (:func:`~pocketpilot.adapters.experience.experience_digest`).
    """

    name = "experience_hints"

    def __init__(self, *, cases: list[dict[str, Any]] | None = None, entries: list[str] | None = None,
                 library: str = "") -> None:
        parsed = [StepCase.model_validate(c) for c in cases or []]
        super().__init__(cases=[c.model_dump(mode="json") for c in parsed], entries=list(entries or []),
                         library=library)
        self._cases = {(c.tool, c.code): c for c in reversed(parsed)}  # the first listed wins
        self._told: set[tuple[str, str]] = set()

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        notices = []
        for call, result in zip(report.calls, report.results, strict=False):
            if result.ok or result.error is None:
                continue
            key = (call.name, result.error.code)
            case = self._cases.get(key)
            if case is None or key in self._told or not all(c.tool in run.tools for c in case.action):
                continue
            self._told.add(key)
            notices.append(Notice(render_step_hint(case), policy=self.name, code=EXPERIENCE_HINT))
        return Advice(notices=notices) if notices else None
