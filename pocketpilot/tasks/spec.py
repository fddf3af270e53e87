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

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..contracts import StopReason

__all__ = [
    "AnswerCriterion",
    "CallCriterion",
    "CallPattern",
    "Capability",
    "Criterion",
    "Group",
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
"""The report's four capability groups; this issue ships tool_use tasks only."""
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


class _Criterion(_Spec):
    name: str | None = None
    """Readable name in the verdict; derived from the criterion when omitted."""


class StateCriterion(_Criterion):
    """The final state at ``path`` satisfies exactly one test.

    ``equals``: exact equality. ``one_of``: equal to one of the values. ``contains``: a string
    containing the text, a list with a matching element, or a dict matching as a subset.
    ``not_contains``: the opposite of ``contains``.
    """

    kind: Literal["state"] = "state"
    path: str = Field(min_length=1)
    equals: Any = None
    one_of: list[Any] | None = None
    contains: Any = None
    not_contains: Any = None

    @model_validator(mode="after")
    def _one_test(self) -> StateCriterion:
        tests = {"equals", "one_of", "contains", "not_contains"} & self.model_fields_set
        if len(tests) != 1:
            raise ValueError("a state criterion needs exactly one of equals, one_of, contains, not_contains")
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


Criterion = Annotated[
    StateCriterion
    | CallCriterion
    | NoCallCriterion
    | OrderCriterion
    | UnchangedCriterion
    | StopCriterion
    | AnswerCriterion,
    Field(discriminator="kind"),
]


class OracleStep(_Spec):
    """One step of a known-good run: a call (or a batch), or a final finish/ask_user/refuse."""

    call: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    batch: list[CallPattern] | None = None
    """Independent calls run as one parallel step."""
    finish: str | None = None
    ask_user: str | None = None
    refuse: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> OracleStep:
        set_ = [k for k in ("call", "batch", "finish", "ask_user", "refuse") if getattr(self, k) is not None]
        if len(set_) != 1:
            raise ValueError("an oracle step is exactly one of call, batch, finish, ask_user, refuse")
        if self.args and self.call is None:
            raise ValueError("args belong to a call step")
        return self

    @property
    def is_final(self) -> bool:
        """Whether this step ends the episode."""
        return self.call is None and self.batch is None


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
    memory: list[dict[str, Any]] = Field(default_factory=list)
    """Memory seeds for memory-group tasks (not used by tool_use tasks)."""
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
