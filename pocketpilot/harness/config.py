"""The budgets of a session: how far one run may go before the harness stops it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UsageError
from .context import ContextBudget
from .recall import MemoryPlacement

__all__ = ["HarnessConfig"]


@dataclass(frozen=True)
class HarnessConfig:
    """Budgets of one session (what the harness does about a step is its policies' business)."""

    max_steps: int = 15
    max_tokens: int = 100_000
    """Compute budget: prompt tokens actually evaluated plus generated tokens, over the run."""
    max_seconds: float = 600.0
    max_parse_failures: int = 3
    """Consecutive unparseable outputs before the run stops with planner_error."""
    max_delegate_depth: int = 1
    capture_episodes: bool = True
    budget: ContextBudget = field(default_factory=ContextBudget)
    memory: MemoryPlacement = field(default_factory=MemoryPlacement)
    """Recall at the start of a request and how the memories are placed (:mod:`.recall`)."""
    answers: bool = True
    """The answer path: ``finish`` may carry an ``answer`` to a question the request asked, and
    the rules say a question about the past is answered from the evidence shown. Off: finish
    is a completion claim only, under the earlier rules."""

    def __post_init__(self) -> None:
        if self.max_steps < 1 or self.max_tokens < 1 or self.max_seconds <= 0:
            raise UsageError("HarnessConfig budgets must be positive")
        if self.budget.conversation < 0:
            raise UsageError("the conversation budget must be >= 0")
