"""The task spec format: a user goal, a starting world, the tools on offer, and completion criteria.

A task never holds a single reference trajectory: it is judged on evidence (final state, the
calls made, how the episode stopped). An optional ``oracle`` (one known-good action sequence)
exists only so tests can prove each task satisfiable; it is never shown to a planner.

Example (YAML)::

    id: settings-wifi-off
    goal: Turn off wifi please
    capability: single_tool
    split: dev
    tools: [settings]
    criteria:
      - {kind: state, path: settings.wifi, equals: false}
      - {kind: unchanged, allow: [settings.wifi]}
    oracle:
      - {call: set_wifi, args: {enabled: false}}
      - {finish: Wi-Fi is off.}
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..contracts import StopReason

__all__ = [
    "AnswerCriterion",
    "CallCriterion",
    "CallPattern",
    "Capability",
    "Criterion",
    "DelegateCriterion",
    "DelegateStep",
    "Group",
    "MemorySeed",
    "NoCallCriterion",
    "OracleStep",
    "OrderCriterion",
    "Split",
    "StateCriterion",
    "StopCriterion",
    "TaskSpec",
    "UnchangedCriterion",
]

Split = Literal["dev", "evolve", "test"]
Group = Literal["tool_use", "memory", "skills", "subagent"]
"""The report's four capability groups."""
Capability = Literal[
    "single_tool",
    "multi_step",
    "information",
    "ordering",
    "error_recovery",
    "clarification",
    "conditional",
    "only_missing",
    "safety",
    "recall",
    "reconcile_intent",
    "resume_verified",
    "distractor_memory",
    "precondition_order",
    "branch_order",
    "delegation",
]
"""What a task is built to exercise (bench reports success per capability)."""


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CallPattern(_Spec):
    """A tool call to look for: the tool name and a subset of its arguments.

    Argument values match as in :func:`pocketpilot.tasks.verify.matches`: strings by
    case-insensitive containment, dicts as subsets, everything else by equality.
    """

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)

    def label(self) -> str:
        """Readable form used in criterion names."""
        if not self.args:
            return self.tool
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.tool}({inner})"


class MemorySeed(_Spec):
    """One memory the task's world starts with (seeded into a fresh store before the run).

    With the harness it is retrievable evidence in the task's store; without it, the same
    memory becomes a message of earlier conversation (a ``user_statement`` as the user's turn,
    anything else as the assistant's), so both configurations receive the same information.
    """

    content: str = Field(min_length=1, max_length=4000)
    tier: Literal["user", "episodic", "long_term", "prospective"] = "episodic"
    category: str | None = Field(default=None, max_length=40)
    source: Literal["user_statement", "tool_result", "inference", "episode", "consolidation"] = "user_statement"
    """Provenance: where the memory came from (sets its default trust)."""
    created_at: datetime
    """When the evidence was observed (the sandbox clock is 2025-03-14 09:30 +01:00)."""
    owner: str = Field(default="user", pattern=r"^[a-z0-9][a-z0-9_.-]{0,39}$")
    """Whose memory it is; the run acts for ``user``, so another owner's items are never visible."""
    trust: float | None = Field(default=None, ge=0.0, le=1.0)
    due_condition: str | None = Field(default=None, max_length=200)
    """Prospective tier: the condition that makes the intent due."""


class _Criterion(_Spec):
    name: str | None = None
    """Readable name in the verdict; derived from the criterion when omitted."""
    already_true: bool = False
    """Meant to hold at the start (the task checks the agent does not break it); otherwise the
    vacuity audit refuses a positive criterion the start state already satisfies."""


class StateCriterion(_Criterion):
    """The final state at ``path`` satisfies exactly one test.

    ``equals``: exact equality. ``one_of``: equal to one of the values. ``contains``: a string
    containing the text, a list with a matching element, or a dict matching as a subset.
    ``not_contains``: the opposite of ``contains``. ``created``: with ``contains`` on a list,
    only elements this run added count (a seeded record that happens to match proves nothing).
    """

    kind: Literal["state"] = "state"
    path: str = Field(min_length=1)
    equals: Any = None
    one_of: list[Any] | None = None
    contains: Any = None
    not_contains: Any = None
    created: bool = False

    @model_validator(mode="after")
    def _one_test(self) -> StateCriterion:
        tests = {"equals", "one_of", "contains", "not_contains"} & self.model_fields_set
        if len(tests) != 1:
            raise ValueError("a state criterion needs exactly one of equals, one_of, contains, not_contains")
        if self.created and "contains" not in tests:
            raise ValueError("created applies to contains (elements of a list this run added)")
        return self

    @property
    def test(self) -> str:
        """Which test this criterion applies."""
        return next(iter({"equals", "one_of", "contains", "not_contains"} & self.model_fields_set))


class CallCriterion(CallPattern, _Criterion):
    """A call of ``tool`` with matching arguments happened (by default: and succeeded)."""

    kind: Literal["call"] = "call"
    ok: bool | None = True
    """True: a successful call; False: a failed one; None: any attempt."""
    min_count: int = Field(default=1, ge=1)


class NoCallCriterion(CallPattern, _Criterion):
    """No call of ``tool`` with matching arguments was even attempted."""

    kind: Literal["no_call"] = "no_call"


class OrderCriterion(_Criterion):
    """The first successful ``before`` call came in an earlier step than the first successful ``after``.

    Calls of one parallel batch are simultaneous, so they never satisfy an ordering.
    """

    kind: Literal["order"] = "order"
    before: CallPattern
    after: CallPattern


class UnchangedCriterion(_Criterion):
    """Nothing changed in the world except under the ``allow`` paths."""

    kind: Literal["unchanged"] = "unchanged"
    allow: list[str] = Field(default_factory=list)


class StopCriterion(_Criterion):
    """The episode stopped for one of these reasons (e.g. ``ask_user`` for a clarification task)."""

    kind: Literal["stop"] = "stop"
    reason: list[StopReason] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _listify(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("reason"), str):
            return {**data, "reason": [data["reason"]]}
        return data


class AnswerCriterion(_Criterion):
    """The episode finished with a summary mentioning the answer.

    Matching ignores case and thousands separators (``8,432`` matches ``8432``).
    """

    kind: Literal["answer"] = "answer"
    all_of: list[str] = Field(default_factory=list)
    any_of: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _something(self) -> AnswerCriterion:
        if not self.all_of and not self.any_of:
            raise ValueError("an answer criterion needs all_of or any_of")
        return self


class DelegateCriterion(_Criterion):
    """A ``delegate`` action whose sub-agent's hand-off was confirmed, with matching instruction/artifacts.

    Confirmed as the harness judges it (:func:`pocketpilot.handoff.review_handoff`): the child
    finished and none of its state-changing calls was denied or failed.

    ``artifacts`` match as a subset (values by case-insensitive containment); ``artifact_values``
    must each appear in some artifact whatever its key, so a task can require that an id
    produced earlier was handed to the sub-agent explicitly without dictating the key's name.
    """

    kind: Literal["delegated"] = "delegated"
    instruction: str | None = None
    artifacts: dict[str, str] = Field(default_factory=dict)
    artifact_values: list[str] = Field(default_factory=list)
    confirmed: bool = True
    min_count: int = Field(default=1, ge=1)


Criterion = Annotated[
    StateCriterion
    | CallCriterion
    | NoCallCriterion
    | OrderCriterion
    | UnchangedCriterion
    | StopCriterion
    | AnswerCriterion
    | DelegateCriterion,
    Field(discriminator="kind"),
]


_STEP_KINDS = ("call", "batch", "memory_search", "delegate", "finish", "ask_user", "refuse")


class OracleStep(_Spec):
    """One step of a known-good run: a call (or a batch), a memory search, a delegation, or a stop."""

    call: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    batch: list[CallPattern] | None = None
    """Independent calls run as one parallel step."""
    memory_search: str | None = None
    """A memory query (needs the harness's memory)."""
    delegate: DelegateStep | None = None
    finish: str | None = None
    ask_user: str | None = None
    refuse: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> OracleStep:
        set_ = [k for k in _STEP_KINDS if getattr(self, k) is not None]
        if len(set_) != 1:
            raise ValueError("an oracle step is exactly one of " + ", ".join(_STEP_KINDS))
        if self.args and self.call is None:
            raise ValueError("args belong to a call step")
        return self

    @property
    def is_final(self) -> bool:
        """Whether this step ends the episode."""
        return self.finish is not None or self.ask_user is not None or self.refuse is not None


class DelegateStep(_Spec):
    """A delegation in an oracle: the instruction, tools and artifacts, and the sub-agent's own steps."""

    instruction: str = Field(min_length=1, max_length=500)
    tools: list[str] = Field(default_factory=list, max_length=16)
    artifacts: dict[str, str] = Field(default_factory=dict)
    steps: list[OracleStep] = Field(min_length=1)
    """The sub-agent's run; it must end with finish, its calls succeeding, for the delegation to be confirmed."""

    @model_validator(mode="after")
    def _ends(self) -> DelegateStep:
        if not self.steps[-1].is_final or any(s.is_final for s in self.steps[:-1]):
            raise ValueError("a delegated run ends with exactly one final step")
        if any(s.delegate is not None for s in self.steps):
            raise ValueError("a sub-agent cannot delegate further")
        return self


OracleStep.model_rebuild()


class TaskSpec(_Spec):
    """One executable task on the sandbox phone."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{2,63}$")
    goal: str = Field(min_length=1, max_length=500)
    """The user's request, in the user's words."""
    capability: Capability
    group: Group = "tool_use"
    split: Split
    domains: list[str] = Field(default_factory=list)
    """Sandbox apps the task is about (for per-domain reporting); defaults to none."""
    seed: int = 0
    initial_state: dict[str, Any] = Field(default_factory=dict)
    """A partial patch deep-merged over ``default_state(seed)`` (lists are replaced whole)."""
    tools: list[str] | Literal["all"] = "all"
    """Exposed tools: tool names or app names (an app stands for all its tools), or all."""
    memory: list[MemorySeed] = Field(default_factory=list)
    """Memories the task's world starts with (see :class:`MemorySeed`)."""
    max_steps: int = Field(default=10, ge=1, le=100)
    criteria: list[Criterion] = Field(min_length=1)
    oracle: list[OracleStep] = Field(default_factory=list)
    """One known-good run, for tests only: never shown to a planner."""

    @model_validator(mode="after")
    def _oracle_ends(self) -> TaskSpec:
        if self.oracle:
            if not self.oracle[-1].is_final:
                raise ValueError("the oracle must end with finish, ask_user or refuse")
            if any(step.is_final for step in self.oracle[:-1]):
                raise ValueError("only the last oracle step may be finish, ask_user or refuse")
        return self
