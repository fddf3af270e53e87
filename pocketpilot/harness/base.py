"""The protocols the harness depends on; concrete backends live elsewhere and arrive by injection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..contracts import (
    Action,
    Episode,
    PlannerInfo,
    PlannerTurn,
    RetrievedMemory,
    Step,
    ToolCall,
    ToolResult,
    ToolSpec,
)

__all__ = [
    "ChatMessage",
    "ConfirmationPolicy",
    "Executor",
    "MemoryStore",
    "PlanRequest",
    "Planner",
    "PlannerOutput",
    "SkillStore",
    "ToolGate",
    "Verifier",
]


class ChatMessage(BaseModel):
    """One message of the assembled context (OpenAI-style roles)."""

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    section: str = "history"
    """Which budgeted section of the context the message belongs to."""
    step: Step | None = Field(default=None, exclude=True)
    """On the two history messages of a step (its action, its feedback): the recorded step, so
    a backend with a structured chat format (OpenAI ``tool_calls``) can rebuild the turn from
    the parsed action and the per-call results. Excluded from dumps: context digests and
    text-only prompts see role and content alone."""


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


@runtime_checkable
class Executor(Protocol):
    """The only thing that changes device or app state."""

    def tools(self) -> list[ToolSpec]:
        """The tools this executor can run now."""
        ...

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one call. Tool failures come back as ``ok=False``; only a lost device raises."""
        ...


@runtime_checkable
class MemoryStore(Protocol):
    """What the harness needs from memory: search, write a candidate, capture an episode."""

    async def search(
        self, query: str, *, tier: str | None = None, k: int = 5
    ) -> list[RetrievedMemory]:
        """Hybrid retrieval for the session's caller; results are evidence only."""
        ...

    async def write(
        self, content: str, *, tier: str, category: str | None, provenance: dict[str, Any]
    ) -> str:
        """Capture a candidate from the planner; returns its id."""
        ...

    async def capture_episode(self, episode: Episode) -> list[str]:
        """Capture a finished episode into episodic memory; returns the new ids."""
        ...


@runtime_checkable
class DescribesRetrieval(Protocol):
    """A memory that can say how it retrieves, for the trace header (hybrid or keyword-only)."""

    @property
    def retrieval(self) -> str:
        """``hybrid (<embedder name>)`` or ``keyword-only``."""
        ...


@runtime_checkable
class SkillStore(Protocol):
    """Skills the planner may load, with tools they expose and gates they enforce."""

    def available(self, exposed_tools: Sequence[str]) -> list[str]:
        """Skill names whose required tools are all exposed."""
        ...

    def load(self, name: str) -> Any:
        """Return the loaded skill (guidance text, exposed tools, preconditions)."""
        ...


@runtime_checkable
class ToolGate(Protocol):
    """A hard precondition on tool calls, enforced by the harness rather than left to the prompt.

    Skills contribute gates when loaded (e.g. "a note is saved, with its id returned, before
    power_off"); an app may pass its own to the Session.

    Two optional members let ``HarnessConfig.sequence_holds`` run a call held only for its
    batch right after the batch: ``objective`` (a bool: the gate verifies its precondition
    from results alone) and ``checked_in_batch(call, ran)`` (True when the batch's
    ``(call, result)`` pairs settled what the gate waited for, e.g. a lookup of the very name
    the held call passes). A gate without them always sends the held call back to the planner.
    """

    def check(self, call: ToolCall, batch: Sequence[ToolCall], history: Sequence[Any]) -> str | None:
        """Return None to allow ``call``, or a message telling the planner what is missing.

        Args:
            call: the call about to run.
            batch: every call of the current step (calls in one batch run concurrently, so a
                call cannot depend on another one of the same batch).
            history: the completed Steps of this session, oldest first.
        """
        ...


class ConfirmationPolicy(Protocol):
    """Decides whether a call that needs confirmation (``ToolSpec.needs_confirmation``) may run."""

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        """True to allow the call; ``spec`` has the call's effective semantics (a tap's classified effect)."""
        ...


class Verifier(Protocol):
    """Judges an episode from its history and evidence the planner may never see."""

    async def __call__(self, episode: Episode) -> Any:
        """Return a Verdict."""
        ...


def allowed_action(action: Action, kinds: Sequence[str]) -> bool:
    """Whether ``action`` is of a kind allowed in this step."""
    return action.kind in kinds
