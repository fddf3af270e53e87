"""What one step tells the loop to do next: one typed outcome, whatever ended the step.

A step ends the run (a stop action, a policy's stop, a lost device, a budget), or hands the
loop calls the harness runs itself in a step of their own, or lets the loop go on. Every
source of a stop becomes :class:`Stopped`, so the loop switches on one value instead of
merging flags, raised exceptions and advice. ``prefix_changed`` says the step changed what the
stable system message is built from (a loaded skill's tools and procedure), so the loop
rebuilds it without knowing which action did that.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..contracts import StopReason, ToolCall

__all__ = ["Continue", "FollowUps", "StepOutcome", "Stopped"]


@dataclass(frozen=True)
class Continue:
    """Ask the planner again."""

    prefix_changed: bool = False


@dataclass(frozen=True)
class FollowUps:
    """Run these held calls in a harness step of their own, then go on."""

    calls: list[ToolCall] = field(default_factory=list)
    prefix_changed: bool = False


@dataclass(frozen=True)
class Stopped:
    """End the run with this reason."""

    reason: StopReason
    detail: str


StepOutcome = Continue | FollowUps | Stopped
