"""The asyncio harness: context assembly, the run loop, guards, planners."""

from .base import (
    ChatMessage,
    ConfirmationPolicy,
    Executor,
    MemoryStore,
    Planner,
    PlannerOutput,
    PlanRequest,
    SkillStore,
    Verifier,
)
from .confirm import AllowAll, CallbackConfirmation, DenyAll
from .context import ContextBudget
from .observer import RunEvent, RunObserver
from .session import HarnessConfig, Session

__all__ = [
    "AllowAll",
    "CallbackConfirmation",
    "ChatMessage",
    "ConfirmationPolicy",
    "ContextBudget",
    "DenyAll",
    "Executor",
    "HarnessConfig",
    "MemoryStore",
    "PlanRequest",
    "Planner",
    "PlannerOutput",
    "RunEvent",
    "RunObserver",
    "Session",
    "SkillStore",
    "Verifier",
]
