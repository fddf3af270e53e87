"""The protocols the harness owns (planner, confirmation, verifier), and the ones it re-exports.

Executor, memory and skill protocols live in the packages that implement them
(``executor/base.py``, ``memory/base.py``, ``skills/base.py``) and ``ChatMessage`` in the
contracts, so nothing outside the harness imports it; they are re-exported here for callers
that import them from the harness.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..contracts import Action, ChatMessage, Episode, PlannerInfo, PlannerTurn, ToolCall, ToolSpec
from ..executor.base import Executor
from ..memory.base import DescribesRetrieval, MemoryStore
from ..skills.base import ChecksInBatch, LoadedSkillView, ObjectiveGate, RepairsCalls, SkillStore, ToolGate

__all__ = [
    "ChatMessage",
    "ChecksInBatch",
    "DescribesRetrieval",
    "LoadedSkillView",
    "ObjectiveGate",
    "RepairsCalls",
    "ConfirmationPolicy",
    "Confirmer",
    "Executor",
    "MemoryStore",
    "PlanRequest",
    "Planner",
    "PlannerOutput",
    "RunExposure",
    "SkillStore",
    "ToolExposure",
    "ToolGate",
    "Verifier",
]


class PlanRequest(BaseModel):
    """Everything a planner needs for one decision."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    messages: list[ChatMessage]
    tools: list[ToolSpec]
    """Tools exposed in this step: the grammar allows exactly these names."""
    kinds: tuple[str, ...]
    """Action kinds allowed in this step (e.g. no delegate inside a sub-agent)."""
    skills: list[str] = Field(default_factory=list)
    """Names of skills that may be loaded now."""
    batch_groups: list[list[str]] = Field(default_factory=list)
    """Tool names a batch takes all its calls from one of (empty: any mix of the tools)."""
    answers: bool = False
    """``finish`` may carry an ``answer`` in this step (the harness's answer path)."""


class PlannerOutput(BaseModel):
    """A parsed action plus the record of how it was produced."""

    model_config = ConfigDict(frozen=True)

    action: Action
    turn: PlannerTurn


@runtime_checkable
class Planner(Protocol):
    """Chooses the next action from the assembled context."""

    @property
    def info(self) -> PlannerInfo:
        """Backend, model file, sha256, quantization and sampler: recorded in every trace."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` occupies in this planner's context (for section budgets)."""
        ...

    async def load(self) -> None:
        """Prepare the backend (idempotent); afterwards ``info`` is complete (sha256, quant)."""
        ...

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        """Return one action; raise PlannerOutputError if the output does not parse."""
        ...

    async def aclose(self) -> None:
        """Release the backend (model, HTTP client)."""
        ...


class Confirmer(Protocol):
    """Decides whether a call that needs confirmation (``ToolSpec.needs_confirmation``) may run.

    The user (a terminal prompt, an app's dialog, a task's stand-in) behind the harness's
    ``confirmation`` policy, which asks it: a confirmer is not itself a policy.
    """

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        """True to allow the call; ``spec`` has the call's effective semantics (a tap's classified effect)."""
        ...


ConfirmationPolicy = Confirmer
"""The earlier name of :class:`Confirmer`, kept for code written against it."""


class Verifier(Protocol):
    """Judges an episode from its history and evidence the planner may never see."""

    async def __call__(self, episode: Episode) -> Any:
        """Return a Verdict."""
        ...


def allowed_action(action: Action, kinds: Sequence[str]) -> bool:
    """Whether ``action`` is of a kind allowed in this step."""
    return action.kind in kinds


class RunExposure(Protocol):
    """One run's tool exposure (:class:`ToolExposure` started for a request)."""

    more_tools: ToolSpec | None
    """A read-only tool the harness answers itself by widening the set (None: not offered)."""

    def expose(self, state: str, pinned: Iterable[str]) -> list[str]:
        """The tools to show now, given the step's state (the last feedback) and the pinned tools."""
        ...

    def widen(self, query: str, shown: Iterable[str]) -> list[str]:
        """Tools to add for the planner's ``query``, none of ``shown``."""
        ...


@runtime_checkable
class ToolExposure(Protocol):
    """Chooses, per step, which of the session's tools the planner sees (e.g. retrieval by the adapter).

    It only narrows what is shown and offered to the grammar: a call of any tool it shows goes
    through the same policies, gates and confirmation as before.
    """

    def start(self, specs: Sequence[ToolSpec], request: str, evidence: Sequence[str]) -> RunExposure:
        """The exposure of one run over ``specs`` for ``request`` and the evidence shown with it."""
        ...
