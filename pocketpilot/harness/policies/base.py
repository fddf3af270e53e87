"""The policy protocol: every harness intervention is one object with typed hooks and outcomes.

The loop (:mod:`pocketpilot.harness.session`) knows no heuristics. It asks its policies three
things, at three points, and does what the typed outcome says:

- before a tool call runs (:meth:`Policy.before_call`): :class:`Allow` it, :class:`Hold` it
  back with a reason the planner reads, :class:`Rewrite` it into another call with a notice,
  or :class:`Stop` the run;
- after a step's results are in (:meth:`Policy.after_step`): :class:`Advice`, i.e. notices
  for the planner, calls the harness runs itself next, action kinds withheld from the next
  step;
- on a stop action or a hand-off (:meth:`Policy.on_stop`): let it stand, or :class:`Hold` it
  (the planner is sent back with the reason).

A policy reads only what the run exposes (:class:`RunView`) and the tools' declared
semantics; it keeps its own state, and :meth:`Policy.fork` gives each run (and each sub-agent)
a fresh copy with the same parameters, so nothing is shared across runs or policies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from ...contracts import (
    Action,
    AskUser,
    Delegate,
    Finish,
    Refuse,
    RetrievedMemory,
    Step,
    StopReason,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from ...skills.base import ToolGate

__all__ = [
    "Advice",
    "Allow",
    "BasePolicy",
    "CallDecision",
    "Hold",
    "Policy",
    "Rewrite",
    "RunView",
    "ShapesBatches",
    "Stop",
    "StepReport",
    "StopAction",
]

StopAction = Finish | AskUser | Refuse | Delegate
"""Actions that end the run or hand it off: what :meth:`Policy.on_stop` may send back."""


@dataclass(frozen=True)
class Allow:
    """Let the call run; ``notice`` (optional) is told to the planner with the step."""

    notice: str = ""


@dataclass(frozen=True)
class Hold:
    """Do not run the call (or let the stop action stand); the planner reads ``message``.

    ``code`` is the failed result's error code (``precondition_failed`` for a gate,
    ``not_allowed`` for a guard, ``confirmation_denied``); ``notice`` is an extra line for the
    step's notices.
    """

    code: str
    message: str
    notice: str = ""


@dataclass(frozen=True)
class Rewrite:
    """Run ``call`` instead of the planned one; the step records what ran and says why."""

    call: ToolCall
    notice: str


@dataclass(frozen=True)
class Stop:
    """End the run now, with this reason."""

    reason: StopReason
    detail: str


CallDecision = Allow | Hold | Rewrite | Stop


@dataclass
class Advice:
    """What a policy adds once a step's results are in."""

    notices: list[str] = field(default_factory=list)
    followups: list[ToolCall] = field(default_factory=list)
    """Held calls the harness runs itself, in a step of its own, right after this one."""
    withhold: frozenset[str] = frozenset()
    """Action kinds not offered in the next planner step."""
    stop: Stop | None = None


@dataclass(frozen=True)
class StepReport:
    """One routed step as the policies see it, before it is recorded."""

    index: int
    action: Action
    calls: Sequence[ToolCall] = ()
    """For a tool step: the calls as decided (rewrites applied), one per result."""
    results: Sequence[ToolResult] = ()
    held: Sequence[ToolCall] = ()
    """Calls a gate held back (``precondition_failed``) in this step."""
    by_harness: bool = False
    """A step the harness ran itself (held calls sequenced after their batch)."""


@runtime_checkable
class RunView(Protocol):
    """The read-only view of one run that policies decide on."""

    @property
    def request(self) -> str: ...

    @property
    def evidence(self) -> Sequence[str]:
        """Request-specific evidence shown with the request (recalled memories, the device clock)."""
        ...

    @property
    def recalled(self) -> Sequence[RetrievedMemory]:
        """The memories recalled for the request, each with its provenance (rendered into ``evidence``;
        a sub-agent gets those of the user's request, not shown to it).

        A policy that lets a memory authorize something reads them here, not in ``evidence``:
        only the provenance says whose words a memory is (:func:`~pocketpilot.harness.recall.is_standing_wish`).
        """
        ...

    @property
    def owner(self) -> str | None:
        """Whose request this is: the owner of the session's memory (None: not known)."""
        ...

    @property
    def user_request(self) -> str:
        """What the user asked: this run's request, or for a sub-agent the request its parent's run serves."""
        ...

    @property
    def delegated(self) -> bool:
        """A sub-agent's run: its request is an instruction the planner wrote, not the user's words."""
        ...

    @property
    def steps(self) -> Sequence[Step]:
        """This run's recorded steps, oldest first."""
        ...

    @property
    def gate_history(self) -> Sequence[Step]:
        """The steps a gate judges on: a parent's completed steps, then this run's."""
        ...

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        """The tools exposed now, with their declared semantics."""
        ...

    @property
    def gates(self) -> Sequence[ToolGate]:
        """Hard preconditions in force now (the session's and loaded skills')."""
        ...

    @property
    def guidance(self) -> Sequence[str]:
        """Static guidance plus the procedures of skills in force."""
        ...

    @property
    def prescribed(self) -> Sequence[str]:
        """The guidance the deployment gives this run: the session's own (an operating policy)
        and the η notes in force now; never a skill's procedure.
        """
        ...

    def said_by_harness(self, message: str) -> bool:
        """Whether an error message is the harness's own (a hold, a denial), not the world's."""
        ...

    async def confirm(self, call: ToolCall, spec: ToolSpec) -> tuple[bool, str]:
        """Ask whoever answers confirmations; returns the answer and why (for the notice)."""
        ...

    async def effect_of(self, call: ToolCall, spec: ToolSpec) -> tuple[ToolSpec, str]:
        """The call's effective semantics (a tap's classified effect) and a detail for messages."""
        ...


@runtime_checkable
class Policy(Protocol):
    """One harness intervention. See the module docstring for when each hook runs."""

    name: ClassVar[str]
    """The name η refers to it by (``pocketpilot.harness.policies.REGISTRY``)."""

    def params(self) -> dict[str, Any]:
        """The parameters it was built with (JSON-able): η and the trace header record them."""
        ...

    def fork(self) -> Policy:
        """A fresh instance with the same parameters and no state."""
        ...

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        """Decide on one call of a batch before it runs."""
        ...

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        """Advise once a step's results are in (None: nothing to add)."""
        ...

    def on_stop(self, action: StopAction, run: RunView) -> Hold | None:
        """Send a stop action or hand-off back (a Hold), or let it stand (None)."""
        ...


@runtime_checkable
class ShapesBatches(Protocol):
    """A policy that restricts which tools may share a batch in the next planner step.

    The loop passes the groups to the planner, whose decoding grammar lets a batch take its
    calls from one group only; a policy that asks for groups still decides on a batch that
    spans them (a planner need not honour the grammar).
    """

    def batch_groups(self, run: RunView) -> list[list[str]]:
        """Tool names a batch takes all its calls from one of (empty: no restriction)."""
        ...


class BasePolicy:
    """Do-nothing hooks and parameter bookkeeping, so a policy writes only the hooks it uses.

    A subclass's ``__init__`` keyword arguments are its parameters: ``params`` returns them
    and ``fork`` rebuilds the policy from them.
    """

    name: ClassVar[str] = "base"
    safety: ClassVar[bool] = False
    """A safety policy is in force in every mode (bare included) and cannot be left out."""

    def __init__(self, **params: Any) -> None:
        self._params = dict(params)

    def params(self) -> dict[str, Any]:
        return dict(self._params)

    def fork(self) -> BasePolicy:
        return type(self)(**self._params)

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        return ALLOW

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        return None

    def on_stop(self, action: StopAction, run: RunView) -> Hold | None:
        return None

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"{type(self).__name__}({args})"


ALLOW = Allow()
