"""Sub-agent hand-offs: whether a child's report counts as confirmed, judged from its record.

A sub-agent's ``finish`` is the child's own claim. A child whose only call was denied
confirmation, or whose write failed, still finishes with "done" when the planner says so; a
parent that takes that claim at face value acts on work that never happened, and a denied
send looks like a sent one one level up. So the hand-off is judged from what the child's
episode recorded: it is confirmed only when the child stopped with a finish, at least one call
of a tool it was given succeeded, every call that could change state succeeded, and its
verifier (when it had one) passed. The harness and a task's ``delegated`` criterion read the
same judgement, so the parent's feedback and the task's verdict cannot disagree about one
hand-off.

A child that called nothing, or whose every call failed, did no work the record shows: its
"done" is a claim about nothing, and counting it as a hand-off let a delegation that did
nothing (the parent then doing the work itself) meet a ``delegated`` criterion. A child given
no tool at all (its parent had none to give) has nothing it could call: its hand-off is its
answer, judged on its stop and verifier alone.

Which calls could change state comes from the tool's declared semantics, never its name.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .contracts import Episode, ToolCall, ToolCallAction, ToolResult, ToolSpec, spec_for_call

__all__ = ["FailedCall", "Handoff", "HandoffCode", "changes_state", "review_handoff"]

HandoffCode = Literal["subagent_denied", "subagent_failed", "subagent_unverified", "subagent_no_call",
                      "subagent_unconfirmed"]

DENIED_CODE = "confirmation_denied"
"""The error code of a call the confirmation policy refused (see the harness's routing)."""


def changes_state(spec: ToolSpec | None) -> bool:
    """Whether a call of ``spec`` may change state: True unless the spec is declared read-only.

    An unknown tool (not in the episode's header) counts as state-changing: without a
    declaration there is nothing that says the failure was harmless to report as done.
    """
    return spec is None or spec.changes_state


class FailedCall(BaseModel):
    """A state-changing call of the child that did not take effect."""

    model_config = ConfigDict(frozen=True)

    tool: str
    code: str
    message: str


class Handoff(BaseModel):
    """The judgement of one sub-agent episode, as the parent is told it."""

    model_config = ConfigDict(frozen=True)

    stop_reason: str | None
    denied: list[FailedCall] = []
    """State-changing calls the confirmation policy refused."""
    failed: list[FailedCall] = []
    """State-changing calls that failed otherwise (held by a gate, rejected by the tool)."""
    verified: bool | None = None
    """The child's verifier's verdict; None when it had no verifier."""
    unmet: list[str] = []
    """Names of the verifier's criteria that failed."""
    succeeded: int = 0
    """Calls of tools the child was given that succeeded (its own sub-agents' included)."""
    attempted: int = 0
    """Calls of tools the child was given, whatever came of them."""
    had_tools: bool = True
    """Whether the child was given any tool (False: there was nothing it could call)."""

    @property
    def worked(self) -> bool:
        """Some call of a tool it was given succeeded, or it had no tool to call."""
        return self.succeeded > 0 or not self.had_tools

    @property
    def confirmed(self) -> bool:
        """Finished, some call of its tools succeeded, no state-changing call denied or failed,
        and the verifier (if any) passed.
        """
        took_effect = not self.denied and not self.failed
        return self.stop_reason == "finish" and self.worked and took_effect and self.verified is not False

    @property
    def code(self) -> HandoffCode:
        """The error code of an unconfirmed hand-off: the weightiest reason first."""
        if self.denied:
            return "subagent_denied"
        if self.failed:
            return "subagent_failed"
        if self.verified is False:
            return "subagent_unverified"
        if self.stop_reason == "finish" and not self.worked:
            return "subagent_no_call"
        return "subagent_unconfirmed"

    def reason(self, detail: str = "") -> str:
        """Why the hand-off is not confirmed, in words the parent's planner reads."""
        parts = []
        if self.denied:
            parts.append("denied: " + "; ".join(f"{c.tool} ({c.message})" for c in self.denied))
        if self.failed:
            parts.append("failed: " + "; ".join(f"{c.tool} ({c.code}: {c.message})" for c in self.failed))
        if self.verified is False:
            parts.append("verification failed" + (f" ({', '.join(self.unmet)})" if self.unmet else ""))
        if self.stop_reason == "finish" and not self.worked:  # a stop other than finish says why itself
            parts.append("no call of its tools succeeded" + (f" ({self.attempted} attempted)" if self.attempted else
                                                             " (it made none)"))
        stopped = f"sub-agent stopped with {self.stop_reason}: {detail}"
        return f"{stopped}; not confirmed: {'; '.join(parts)}" if parts else stopped


def _calls(episode: Episode) -> Iterator[tuple[ToolCall, ToolResult | None, ToolSpec | None]]:
    """Every tool call of the episode with its result and declared spec, its own sub-agents' too."""
    specs = {t.name: t for t in episode.header.tools}
    for step in episode.steps:
        if isinstance(step.action, ToolCallAction):
            for i, call in enumerate(step.action.calls):
                yield call, (step.results[i] if i < len(step.results) else None), spec_for_call(specs, call)
        for child in step.children:
            yield from _calls(child)


def _given(episode: Episode) -> set[str]:
    """The tools the child was given: its header's, and those a loaded skill added."""
    return {t.name for t in episode.header.tools} | {t.name for s in episode.steps for t in s.tools_added}


def review_handoff(episode: Episode) -> Handoff:
    """Judge a sub-agent's episode (see the module docstring).

    A failed call that the same call (name and arguments) later made good counts as done: a
    call a gate held until its prerequisite returned, or a retry after a transient error,
    took effect in the end. A call with no result recorded did not take effect. Calls of its
    own sub-agents count as its work: they run tools it was given.
    """
    calls = list(_calls(episode))
    given = _given(episode)
    mine = [(call, result) for call, result, _ in calls if call.name in given]
    denied: list[FailedCall] = []
    failed: list[FailedCall] = []
    for i, (call, result, spec) in enumerate(calls):
        if (result is not None and result.ok) or not changes_state(spec):
            continue
        key = call.key()
        if any(later.key() == key and r is not None and r.ok for later, r, _ in calls[i + 1 :]):
            continue
        if result is None or result.error is None:
            failed.append(FailedCall(tool=call.name, code="no_result", message="no result was recorded"))
        elif result.error.code == DENIED_CODE:
            denied.append(FailedCall(tool=call.name, code=result.error.code, message=result.error.message))
        else:
            failed.append(FailedCall(tool=call.name, code=result.error.code, message=result.error.message))
    verdict = episode.verdict
    return Handoff(
        stop_reason=episode.stop_reason,
        denied=denied,
        failed=failed,
        verified=None if verdict is None else verdict.success,
        unmet=[] if verdict is None else [c.name for c in verdict.criteria if not c.passed],
        succeeded=sum(1 for _, result in mine if result is not None and result.ok),
        attempted=len(mine),
        had_tools=bool(given),
    )
