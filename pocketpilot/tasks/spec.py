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

A task on a world of its own (see :class:`WorldSpec` and :mod:`pocketpilot.tasks.world`)::

    world:
      apps: ["mypkg.notes:NotesApp", "mypkg.tools:lookup_weather"]
      state_model: "mypkg.state:AppState"
      initial_state: {notes: []}
    criteria:
      - {kind: state, path: notes, contains: {title: milk}, created: true}
      - {kind: state, path: notes.0.priority, in: [high, urgent]}
      - {kind: state, path: volume, between: [20, 40]}
      - {kind: state, path: notes, contains: {body: "8600.0"}, forms: {body: {kind: number}}, created: true}
      - {kind: last_call, tool: power_off}            # nothing state-changing after power_off
      - {kind: count, tool: create_note, at_least: 1, at_most: 1}
      - {kind: no_error, code: not_found}
      - {kind: delegated, used: [send_sms], not_used: [delete_note]}
      - {kind: delegation_order, before: {used: [create_note]}, after: {used: [send_sms]}}
      - {kind: either, path: notes, fields: [title, body], contains: "42", created: true}
      - {kind: number_in_text, path: notes, fields: [body], between: [40, 44], created: true}
      - {kind: action_order, before: {action: memory_search}, after: {tool: send_sms}}
      - {kind: action_count, action: delegate, at_least: 1}
      - {kind: no_parent_call}                         # every call came from a sub-agent
      - {kind: check, ref: "mypkg.checks:parked", args: {bay: "42"}}   # a team's own Python check

Beside the sandbox (``sandbox: true``), ``override: true`` makes the world's tool win a name the
phone also offers, and a state field both have is addressed as ``sandbox.cast`` / ``world.cast``.

A task may carry its operating policy and what running it needs (a folder's ``_defaults.yaml``
gives these to every task in it; see :class:`pocketpilot.tasks.loader.FolderDefaults`)::

    guidance: ["Read the APN settings before resetting them.", {file: policy.md}]
    budget: {guidance: 7000}
    n_ctx: 16384
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    field_validator,
    model_serializer,
    model_validator,
)

from ..contracts import StopReason
from .forms import ValueForm

__all__ = [
    "ActionCountCriterion",
    "ActionKind",
    "ActionOrderCriterion",
    "ActionPattern",
    "AnswerCriterion",
    "BudgetSection",
    "CallCriterion",
    "CallPattern",
    "Capability",
    "CheckCriterion",
    "CountCriterion",
    "Criterion",
    "DelegateCriterion",
    "DelegateStep",
    "DelegationOrderCriterion",
    "DelegationPattern",
    "EitherCriterion",
    "Group",
    "GuidanceDoc",
    "LastCallCriterion",
    "MemorySeed",
    "NoCallCriterion",
    "NoErrorCriterion",
    "NoParentCallCriterion",
    "NumberInTextCriterion",
    "OracleStep",
    "OrderCriterion",
    "Split",
    "StateCriterion",
    "StopCriterion",
    "TaskSpec",
    "UnchangedCriterion",
    "WorldSpec",
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


_STATE_TESTS = ("equals", "one_of", "contains", "not_contains", "between")

_REF = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
"""A ``module:attr`` reference (a world's app, a custom check)."""


class StateCriterion(_Criterion):
    """The final state at ``path`` satisfies exactly one test.

    ``equals``: exact equality. ``one_of`` (or ``in``): equal to one of the values.
    ``contains``: a string containing the text, a list with a matching element, or a dict
    matching as a subset. ``not_contains``: the opposite of ``contains``. ``between: [lo, hi]``:
    a number (not a bool) with ``lo <= value <= hi``. ``created``: with ``contains`` on a list,
    only elements this run added count (a seeded record that happens to match proves nothing).
    ``forms``: with a dict ``contains``, the declared equivalent forms of some of its fields'
    values, by field: a value written into text ("8600" for a balance of 8600.0) is judged as an
    answer with that form is (:mod:`.forms`); a field without one keeps the containment test.
    """

    kind: Literal["state"] = "state"
    path: str = Field(min_length=1)
    equals: Any = None
    one_of: list[Any] | None = None
    contains: Any = None
    not_contains: Any = None
    between: tuple[float, float] | None = None
    created: bool = False
    forms: dict[str, ValueForm] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> Any:
        # a criterion without forms dumps as before the field existed: its task's digest holds
        data = handler(self)
        if isinstance(data, dict) and not self.forms:
            data.pop("forms", None)
        return data

    @model_validator(mode="before")
    @classmethod
    def _in_is_one_of(cls, data: Any) -> Any:
        # ``in`` reads better in YAML but is a Python keyword: it is the same test as one_of
        if isinstance(data, dict) and "in" in data:
            if "one_of" in data:
                raise ValueError("give in or one_of, not both")
            data = {("one_of" if k == "in" else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _one_test(self) -> StateCriterion:
        tests = set(_STATE_TESTS) & self.model_fields_set
        if len(tests) != 1:
            raise ValueError("a state criterion needs exactly one of equals, one_of (in), contains, not_contains, "
                             "between")
        if self.created and "contains" not in tests:
            raise ValueError("created applies to contains (elements of a list this run added)")
        if self.between is not None and self.between[0] > self.between[1]:
            raise ValueError(f"between: {self.between[0]} is above {self.between[1]}")
        if self.forms:
            fields = self.contains if isinstance(self.contains, dict) else None
            if fields is None:
                raise ValueError("forms applies to contains with a dict (a record's fields)")
            if unknown := sorted(set(self.forms) - set(fields)):
                raise ValueError(f"forms names fields contains does not: {', '.join(unknown)}")
        return self

    @property
    def test(self) -> str:
        """Which test this criterion applies."""
        return next(t for t in _STATE_TESTS if t in self.model_fields_set)


class CallCriterion(CallPattern, _Criterion):
    """A call of ``tool`` with matching arguments happened (by default: and succeeded)."""

    kind: Literal["call"] = "call"
    ok: bool | None = True
    """True: a successful call; False: a failed one; None: any attempt."""
    min_count: int = Field(default=1, ge=1)


class NoCallCriterion(CallPattern, _Criterion):
    """No call of ``tool`` with matching arguments was even attempted."""

    kind: Literal["no_call"] = "no_call"


class CountCriterion(CallPattern, _Criterion):
    """The number of calls of ``tool`` with matching arguments lies within bounds.

    ``ok``: None counts every attempt, True successful calls only, False failed ones.
    """

    kind: Literal["count"] = "count"
    at_least: int | None = Field(default=None, ge=1)
    at_most: int | None = Field(default=None, ge=0)
    ok: bool | None = None

    @model_validator(mode="after")
    def _bounded(self) -> CountCriterion:
        if self.at_least is None and self.at_most is None:
            raise ValueError("a count criterion needs at_least or at_most")
        if self.at_least is not None and self.at_most is not None and self.at_least > self.at_most:
            raise ValueError(f"at_least {self.at_least} is above at_most {self.at_most}")
        return self


class LastCallCriterion(CallPattern, _Criterion):
    """The last state-changing call matched ``tool``/``args`` (so nothing changed the world after it).

    State-changing is read from each tool's declared spec (not ``read_only``), never from its
    name: "nothing after ``power_off``" is ``{kind: last_call, tool: power_off}``. Every attempt
    counts, failed ones included (an attempt after the end is what the check is for); ``ok``
    True also requires that last call to have succeeded. Calls of one parallel batch are
    simultaneous, so a batch holding two state-changing calls has no last one.
    """

    kind: Literal["last_call"] = "last_call"
    ok: bool = True


class NoErrorCriterion(_Criterion):
    """No call failed with error ``code`` (of ``tool`` only, when given)."""

    kind: Literal["no_error"] = "no_error"
    code: str = Field(min_length=1)
    tool: str | None = None


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

    Matching ignores case and thousands separators (``8,432`` matches ``8432``). With a ``form``,
    each value is matched in any of the form's declared equivalent forms ("07:00-22:00" as "7 am
    to 10 pm", see :mod:`.forms`); without one, the match stays exact.
    """

    kind: Literal["answer"] = "answer"
    all_of: list[str] = Field(default_factory=list)
    any_of: list[str] = Field(default_factory=list)
    form: ValueForm | None = None
    """The kind of value answered and the forms it may be said in (None: exact text)."""

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> Any:
        # a criterion without a form dumps as before the field existed: its task's digest holds
        data = handler(self)
        if isinstance(data, dict) and self.form is None:
            data.pop("form", None)
        return data

    @model_validator(mode="after")
    def _something(self) -> AnswerCriterion:
        if not self.all_of and not self.any_of:
            raise ValueError("an answer criterion needs all_of or any_of")
        return self


class DelegateCriterion(_Criterion):
    """A ``delegate`` action whose sub-agent's hand-off was confirmed, with matching instruction/artifacts.

    Confirmed as the harness judges it (:func:`pocketpilot.handoff.review_handoff`): the child
    finished, some call of a tool it was given succeeded (a delegation that did nothing meets
    no criterion, whoever did the work), and none of its state-changing calls was denied or failed.

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
    used: list[str] = Field(default_factory=list)
    """Tools the sub-agent must have called successfully."""
    not_used: list[str] = Field(default_factory=list)
    """Tools the sub-agent must not even have attempted."""


class DelegationPattern(_Spec):
    """A delegation to look for: instruction text, artifacts (as in ``delegated``), tools its sub-agent used."""

    instruction: str | None = None
    artifacts: dict[str, str] = Field(default_factory=dict)
    used: list[str] = Field(default_factory=list)

    def label(self) -> str:
        """Readable form used in criterion names."""
        parts = [repr(self.instruction)] if self.instruction else []
        parts += [f"{k}={v!r}" for k, v in self.artifacts.items()]
        parts += [f"using {t}" for t in self.used]
        return "delegation(" + ", ".join(parts) + ")"


class DelegationOrderCriterion(_Criterion):
    """The first delegation matching ``before`` came in an earlier step than the first matching ``after``."""

    kind: Literal["delegation_order"] = "delegation_order"
    before: DelegationPattern
    after: DelegationPattern


_VALUE_TESTS = ("equals", "one_of", "contains", "between")


class EitherCriterion(_Criterion):
    """The value is in one field or another: some of ``fields`` passes the test.

    With ``path`` the fields are read under the value there, of each element when it is a list
    (``created``: only elements this run added), so "a new note whose title or body holds 42" is
    ``{kind: either, path: notes.items, fields: [title, body], contains: "42", created: true}``;
    without ``path`` they are paths from the state's root. Tests as in ``state``: ``equals``,
    ``one_of`` (``in``), ``contains``, ``between``; exactly one.
    """

    kind: Literal["either"] = "either"
    path: str | None = Field(default=None, min_length=1)
    fields: list[str] = Field(min_length=2)
    equals: Any = None
    one_of: list[Any] | None = None
    contains: Any = None
    between: tuple[float, float] | None = None
    created: bool = False

    @model_validator(mode="before")
    @classmethod
    def _in_is_one_of(cls, data: Any) -> Any:
        return StateCriterion._in_is_one_of(data)

    @model_validator(mode="after")
    def _one_test(self) -> EitherCriterion:
        tests = set(_VALUE_TESTS) & self.model_fields_set
        if len(tests) != 1:
            raise ValueError("an either criterion needs exactly one of equals, one_of (in), contains, "
                             "between")
        if self.created and self.path is None:
            raise ValueError("created needs a path (the list whose new elements count)")
        if self.between is not None and self.between[0] > self.between[1]:
            raise ValueError(f"between: {self.between[0]} is above {self.between[1]}")
        return self

    @property
    def test(self) -> str:
        """Which test this criterion applies."""
        return next(t for t in _VALUE_TESTS if t in self.model_fields_set)


class NumberInTextCriterion(_Criterion):
    """A number written in text lies within ``between: [lo, hi]``.

    Numbers are read out of the text at ``path`` (or of any of ``fields`` under it, of each
    element when it is a list; ``created``: only elements this run added); one of them in range
    passes. Thousands separators are ignored (``8,432`` is 8432); a minus sign counts only
    where it starts a number (``2025-03-14`` holds no negative numbers).
    """

    kind: Literal["number_in_text"] = "number_in_text"
    path: str = Field(min_length=1)
    fields: list[str] = Field(default_factory=list)
    between: tuple[float, float]
    created: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> NumberInTextCriterion:
        if self.between[0] > self.between[1]:
            raise ValueError(f"between: {self.between[0]} is above {self.between[1]}")
        return self


ActionKind = Literal["tool_call", "memory_search", "memory_write", "load_skill", "delegate"]
"""Kinds of action a count or an order can look for (the episode's stops are ``stop``'s)."""


class ActionPattern(_Spec):
    """An action to look for: a tool call (``tool``, ``args``) or another action (``action``).

    ``text`` matches by case-insensitive containment what the action holds: a memory search's
    query, a memory write's content, a skill's name, a delegation's instruction. ``by``: anyone
    (sub-agents' actions included), the parent only, or sub-agents only. ``ok``: True, the action
    took effect (a call that succeeded; another action the harness did not refuse); False, it was
    refused or failed; None, any attempt.
    """

    action: ActionKind | None = None
    """The action's kind (default: ``tool_call`` when ``tool`` is given)."""
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    text: str | None = Field(default=None, min_length=1)
    by: Literal["anyone", "parent", "sub_agent"] = "anyone"
    ok: bool | None = True

    @model_validator(mode="after")
    def _what(self) -> ActionPattern:
        if self.tool is None and self.action is None:
            raise ValueError("an action pattern needs a tool or an action kind")
        if self.tool is not None and self.action not in (None, "tool_call"):
            raise ValueError(f"tool belongs to a tool_call, not a {self.action}")
        if self.args and self.tool is None:
            raise ValueError("args belong to a tool")
        if self.text is not None and self.looks_for == "tool_call":
            raise ValueError("text matches a memory action, a skill or a delegation; a call matches by args")
        return self

    @property
    def looks_for(self) -> ActionKind:
        """The action kind looked for."""
        return self.action or "tool_call"

    def label(self) -> str:
        """Readable form used in criterion names."""
        if self.tool is not None:
            base = CallPattern(tool=self.tool, args=self.args).label()
        else:
            base = self.looks_for + (f"({self.text!r})" if self.text else "")
        return base + ("" if self.by == "anyone" else f" by {self.by.replace('_', '-')}")


class ActionCountCriterion(ActionPattern, _Criterion):
    """The number of matching actions lies within bounds; memory actions, skills and delegations
    count as tool calls do (``{kind: action_count, action: memory_search, at_least: 1}``).
    """

    kind: Literal["action_count"] = "action_count"
    at_least: int | None = Field(default=None, ge=1)
    at_most: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _bounded(self) -> ActionCountCriterion:
        if self.at_least is None and self.at_most is None:
            raise ValueError("an action_count criterion needs at_least or at_most")
        if self.at_least is not None and self.at_most is not None and self.at_least > self.at_most:
            raise ValueError(f"at_least {self.at_least} is above at_most {self.at_most}")
        return self


class ActionOrderCriterion(_Criterion):
    """The first action matching ``before`` came earlier than the first matching ``after``, whatever
    their kinds ("a memory search before send_message"). A delegation comes before its sub-agent's
    own actions; actions of one parallel batch are simultaneous, so they never satisfy an order.
    """

    kind: Literal["action_order"] = "action_order"
    before: ActionPattern
    after: ActionPattern


class NoParentCallCriterion(_Criterion):
    """The parent made no tool call itself, not even an attempt: every call came from a sub-agent.

    A guard, true of a run that did nothing: pair it with what the sub-agents must have done
    (``delegated``, ``state``).
    """

    kind: Literal["no_parent_call"] = "no_parent_call"


class CheckCriterion(_Criterion):
    """A team's own check: a Python callable named by ``ref`` (``module:attr``), imported like a
    world's apps (the task file's folder on ``sys.path``).

    It is called as ``check(state, episode, **args)``: ``state`` a copy of the final state's JSON
    form (what ``state`` criteria read), ``episode`` the run; one with an ``initial`` parameter
    also gets the start state's. It returns a bool or ``(bool, detail)``. An exception, or any
    other return, is a failed criterion whose detail says so, never a crash; a reference that does
    not import or is not callable is refused when the task loads.
    """

    kind: Literal["check"] = "check"
    ref: str
    args: dict[str, Any] = Field(default_factory=dict)

    @field_validator("ref")
    @classmethod
    def _ref(cls, value: str) -> str:
        if not _REF.fullmatch(value):
            raise ValueError(f"{value!r} is not a 'module:attr' reference (e.g. 'mypkg.checks:parked')")
        return value


Criterion = Annotated[
    StateCriterion
    | CallCriterion
    | NoCallCriterion
    | OrderCriterion
    | UnchangedCriterion
    | StopCriterion
    | AnswerCriterion
    | DelegateCriterion
    | CountCriterion
    | LastCallCriterion
    | NoErrorCriterion
    | DelegationOrderCriterion
    | EitherCriterion
    | NumberInTextCriterion
    | ActionCountCriterion
    | ActionOrderCriterion
    | NoParentCallCriterion
    | CheckCriterion,
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


_RUN_SETTINGS = ("guidance", "budget", "n_ctx")
"""TaskSpec fields added after outcome logs recorded digests: left out of the digest while unset."""


class WorldSpec(_Spec):
    """The world a task brings: app modules beside the sandbox or instead of it, and its state.

    ``apps`` are ``module:attr`` references (see :mod:`pocketpilot.tasks.world` for what they may
    name); ``state_model`` a pydantic model class, ``initial_state`` validated by it (omitted:
    the model's defaults). The task file's folder is on ``sys.path`` while they import.
    """

    apps: list[str] = Field(default_factory=list)
    state_model: str | None = None
    initial_state: dict[str, Any] | None = None
    sandbox: bool | None = None
    """Keep the sandbox phone's apps too (default: only when no apps are given)."""
    concurrent: bool = False
    """Whether the world's calls may run at the same time (a tool's own ``concurrent`` overrides)."""
    override: StrictBool | list[str] = False
    """Beside the sandbox: the world's tool wins a name both offer (True: every such name; a
    list: those names). Without it a shared name cannot be exposed (left unexposed it is harmless)."""

    @field_validator("apps", "state_model")
    @classmethod
    def _refs(cls, value: Any) -> Any:
        for ref in value if isinstance(value, list) else [value] if value is not None else []:
            if not _REF.fullmatch(ref):
                raise ValueError(f"{ref!r} is not a 'module:attr' reference (e.g. 'mypkg.notes:NotesApp')")
        return value

    @model_validator(mode="after")
    def _something(self) -> WorldSpec:
        if not self.apps and self.sandbox is False:
            raise ValueError("a world without apps needs the sandbox")
        if self.initial_state is not None and self.state_model is None:
            raise ValueError("initial_state needs a state_model to validate it")
        if self.override is not False and not (self.apps and self.keeps_sandbox):
            raise ValueError("override settles tool names the world shares with the sandbox: it needs both")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> Any:
        # a world without an override dumps as before the field existed: its task's digest holds
        data = handler(self)
        if isinstance(data, dict) and self.override is False:
            data.pop("override", None)
        return data

    @property
    def keeps_sandbox(self) -> bool:
        """Whether the sandbox phone is part of this world."""
        return self.sandbox if self.sandbox is not None else not self.apps


BudgetSection = Literal["rules", "tools", "guidance", "history", "conversation"]
"""Sections of the planner's context with a token budget (the harness's ``ContextBudget`` fields)."""


class GuidanceDoc(_Spec):
    """One entry of a task's operating policy: text, or a file beside the task (read at load time).

    In YAML a plain string is text; ``{file: policy.md}`` names a file relative to the task
    file's folder (or, in a folder's ``_defaults.yaml``, to that folder). The loader reads the
    file into ``text`` and keeps ``file`` for the record, so the task's digest covers the policy.
    """

    text: str | None = Field(default=None, min_length=1)
    file: str | None = Field(default=None, min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _text(cls, data: Any) -> Any:
        return {"text": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _something(self) -> GuidanceDoc:
        if self.text is None and self.file is None:
            raise ValueError("a guidance entry is text or {file: PATH}")
        return self


def _listify_guidance(value: Any) -> Any:
    return [value] if isinstance(value, (str, dict)) else value


class TaskSpec(_Spec):
    """One executable task: on the sandbox phone, on a world of its own, or on both."""

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
    world: WorldSpec | None = None
    """The task's own world (None: the sandbox phone alone)."""
    guidance: list[GuidanceDoc] = Field(default_factory=list)
    """The task's operating policy, shown to the planner in both modes (it is what the task's
    owner tells any agent), ahead of the harness's own routed notes. Unset: the folder's
    ``_defaults.yaml``; ``run``/``bench --guidance-file`` replaces it."""
    budget: dict[BudgetSection, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)
    """Token budgets of context sections (e.g. ``{guidance: 7000}`` for a long policy), over
    the folder's and the defaults; a ``--budget`` flag overrides a section."""
    n_ctx: int | None = Field(default=None, ge=512)
    """Context window the in-process model needs for this task (a ``--n-ctx`` flag overrides;
    a bench loads the model once with the largest its tasks ask for)."""
    _roots: tuple[Path, ...] = PrivateAttr(default=())
    """Folders put on ``sys.path`` to import the world's modules (set by the loader from the file's place)."""

    @property
    def roots(self) -> tuple[Path, ...]:
        """Where the world's modules are imported from (the task file's folder, a suite's folder)."""
        return self._roots

    def digest(self) -> str:
        """sha256 of the task's content: an outcome recorded for another version of the same id
        (a regenerated suite) is not this task's outcome.

        The run settings (guidance, budget, n_ctx) count only when set, so a task that sets none
        keeps the digest it had before they existed (outcome logs stay valid).
        """
        unset = {f for f in _RUN_SETTINGS if f not in self.model_fields_set}
        return hashlib.sha256(self.model_dump_json(exclude=unset).encode()).hexdigest()

    def guidance_texts(self) -> list[str]:
        """The policy's entries as text (a file entry the loader has not read yet is refused).

        Raises:
            ValueError: a ``{file: ...}`` entry was never read (the spec did not come from the loader).
        """
        unread = [g.file for g in self.guidance if g.text is None]
        if unread:
            raise ValueError(f"guidance file {unread[0]!r} was not read (load the task with load_task or parse_task)")
        return [g.text for g in self.guidance if g.text is not None]

    @field_validator("guidance", mode="before")
    @classmethod
    def _guidance_list(cls, value: Any) -> Any:
        return _listify_guidance(value)

    def with_roots(self, roots: tuple[Path, ...]) -> TaskSpec:
        """This spec remembering where its world's modules are imported from."""
        out = self.model_copy()
        out._roots = tuple(roots)
        return out

    @model_validator(mode="after")
    def _oracle_ends(self) -> TaskSpec:
        if self.oracle:
            if not self.oracle[-1].is_final:
                raise ValueError("the oracle must end with finish, ask_user or refuse")
            if any(step.is_final for step in self.oracle[:-1]):
                raise ValueError("only the last oracle step may be finish, ask_user or refuse")
        return self
