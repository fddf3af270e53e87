"""What a run tells an observer while it happens: runs, planner calls, tool calls, hand-offs.

The trace file is written step by step, after the fact; tracing backends (OpenTelemetry,
a dashboard) need the start *and* the end of each operation, with its parent, as it happens.
The loop emits typed events to a :class:`RunObserver`; adapters such as
:mod:`pocketpilot.tracing.otel` turn them into spans. The harness imports no tracing library, so an
install without one behaves exactly as before.

Every event names its place in the tree explicitly (episode id, step index, call id) rather
than relying on an ambient context: the calls of one batch run concurrently and a sub-agent's
run nests inside its parent's step, so the adapter can always find the parent.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from ..contracts import (
    Delegate,
    Episode,
    EpisodeHeader,
    PlannerInfo,
    PlannerTurn,
    ToolCall,
    ToolResult,
    ToolSpec,
)

__all__ = [
    "CallEnded",
    "CallStarted",
    "DelegateEnded",
    "DelegateStarted",
    "PlanEnded",
    "PlanStarted",
    "RunEnded",
    "RunEvent",
    "RunObserver",
    "RunStarted",
]


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    episode_id: str


class RunStarted(_Event):
    """A session started a run (its header is complete: model hash, tools)."""

    kind: Literal["run_started"] = "run_started"
    header: EpisodeHeader
    depth: int = 0
    parent_step: int | None = None
    """For a sub-agent: the step of ``header.parent_episode_id`` whose delegate started it."""


class RunEnded(_Event):
    """The run stopped; ``episode`` is None when it ended by an unexpected exception (``error``)."""

    kind: Literal["run_ended"] = "run_ended"
    episode: Episode | None = None
    error: str | None = None


class PlanStarted(_Event):
    """The planner was asked for step ``step``'s action."""

    kind: Literal["plan_started"] = "plan_started"
    step: int
    planner: PlannerInfo


class PlanEnded(_Event):
    """The planner answered (``turn``) or failed (``error``: ``Type: message``)."""

    kind: Literal["plan_ended"] = "plan_ended"
    step: int
    turn: PlannerTurn | None = None
    error: str | None = None
    error_type: str | None = None


class CallStarted(_Event):
    """One tool call of step ``step`` is about to pass the gates and run."""

    kind: Literal["call_started"] = "call_started"
    step: int
    call_id: str
    call: ToolCall
    spec: ToolSpec | None = None
    """None: the planner named a tool that is not exposed."""


class CallEnded(_Event):
    """The call's result (a held or denied call is a failed result), or ``error`` if the executor raised."""

    kind: Literal["call_ended"] = "call_ended"
    step: int
    call_id: str
    call: ToolCall
    result: ToolResult | None = None
    error: str | None = None
    error_type: str | None = None


class DelegateStarted(_Event):
    """Step ``step`` hands off to a sub-agent (whose RunStarted names this step as parent)."""

    kind: Literal["delegate_started"] = "delegate_started"
    step: int
    call_id: str
    action: Delegate


class DelegateEnded(_Event):
    """The sub-agent came back; ``result`` is what the parent's planner is fed."""

    kind: Literal["delegate_ended"] = "delegate_ended"
    step: int
    call_id: str
    result: ToolResult | None = None
    error: str | None = None


RunEvent = (
    RunStarted | RunEnded | PlanStarted | PlanEnded | CallStarted | CallEnded | DelegateStarted | DelegateEnded
)


@runtime_checkable
class RunObserver(Protocol):
    """Receives a run's events as they happen, on the event loop's thread.

    It must return quickly (it runs inside the loop) and should ignore event kinds it does not
    know, so that new kinds can be added. An observer that raises is logged and the run goes
    on: observability never decides whether the phone's work happens.
    """

    def observe(self, event: RunEvent) -> None:
        """Handle one event."""
        ...
