"""The asyncio harness: context assembly, the run loop, its policies, planners."""

from .base import (
    ChatMessage,
    ConfirmationPolicy,
    Confirmer,
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
from .conversation import Conversation
from .observer import RunEvent, RunObserver
from .policies import Policy, default_policies, safety_policies
from .recall import MemoryPlacement, Recall
from .session import HarnessConfig, Session

__all__ = [
    "AllowAll",
    "CallbackConfirmation",
    "ChatMessage",
    "ConfirmationPolicy",
    "Confirmer",
    "ContextBudget",
    "Conversation",
    "DenyAll",
    "Executor",
    "HarnessConfig",
    "MemoryPlacement",
    "MemoryStore",
    "PlanRequest",
    "Planner",
    "PlannerOutput",
    "Policy",
    "Recall",
    "RunEvent",
    "RunObserver",
    "Session",
    "SkillStore",
    "Verifier",
    "default_policies",
    "safety_policies",
]
