"""What routing one action produced: the record the loop turns into a step."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..contracts import Action, Episode, Notice, RetrievedMemory, StopReason, ToolCall, ToolResult

__all__ = ["Routed"]


@dataclass
class Routed:
    """The results of one action, and what the loop records and does next."""

    results: list[ToolResult] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    retrieved: list[RetrievedMemory] = field(default_factory=list)
    children: list[Episode] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    """For a tool step: the calls as decided (a policy's rewrite applied), one per result."""
    held: list[ToolCall] = field(default_factory=list)
    """Calls a gate held back in this step."""
    executed: Action | None = None
    """The action as run, where a policy rewrote a call; None: as planned."""
    stop: StopReason | None = None
    stop_detail: str = ""
    prefix_changed: bool = False
    """The action changed what the system message is built from (a loaded skill's tools and
    procedure): the loop rebuilds it before the next step."""
    interrupted: bool = False
    """The run ended inside routing (a policy's Stop, a lost device): nothing after that point
    ran, and no policy advises on the step."""
    interventions: list[str] = field(default_factory=list)
    """Policies whose decision changed this step (a hold, a rewrite, a stop, a notice): the
    step's ``interventions``."""

    @classmethod
    def halt(cls, reason: StopReason, detail: str, interventions: list[str] | None = None) -> Routed:
        """The run ends here, with nothing routed (``interventions``: the policies that decided so far)."""
        return cls(stop=reason, stop_detail=detail, interrupted=True, interventions=list(interventions or ()))

