"""Hard preconditions on tool calls: the runtime half of a skill's ``preconditions``.

Each gate implements the harness :class:`~pocketpilot.skills.base.ToolGate` protocol: it sees
the call about to run, the whole batch it belongs to, and the completed steps, and returns
``None`` or a message telling the planner what is missing. Two rules hold for every gate:

- **A batch is simultaneous.** Calls of one ``tool_call`` step run concurrently, so a call in
  the same batch is never evidence for another one; a gate that needs a prior result blocks a
  call whose prerequisite sits in the same batch.
- **Only results count.** Evidence is a *successful* earlier result (``ok`` and, where asked,
  a returned field), never the planner's claim or a call that was blocked or failed.

Tool calls made by sub-agents (``Step.children``) count as evidence at the position of the
delegate step that ran them: they happened before the parent's next step.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..contracts import ToolCall, ToolCallAction, ToolResult

__all__ = [
    "DependsOnResultGate",
    "PreconditionGate",
    "QueryBeforeToggleGate",
    "RequiresPriorSuccessGate",
    "StopBeforeStartGate",
    "executed_calls",
]

ANY_TOOL = "*"
"""In ``depends_on_result.waits_for``: every other call (the gated call must be alone in its batch)."""


def executed_calls(history: Sequence[Any]) -> Iterator[tuple[ToolCall, ToolResult]]:
    """Every (call, result) of the completed steps, oldest first, sub-agent calls included."""
    for step in history:
        action = getattr(step, "action", None)
        if isinstance(action, ToolCallAction):
            yield from zip(action.calls, step.results, strict=False)
        for child in getattr(step, "children", ()):
            yield from executed_calls(child.steps)


def field_value(data: Any, path: str) -> Any:
    """The value at a dotted ``path`` of a result's data, or None."""
    value = data
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _present(value: Any) -> bool:
    return value is not None and value != "" and value != [] and value != {}


def _contains_value(data: Any, wanted: str) -> bool:
    """Whether ``wanted`` occurs as a scalar anywhere in ``data`` (ids returned inside lists count)."""
    if isinstance(data, dict):
        return any(_contains_value(v, wanted) for v in data.values())
    if isinstance(data, list):
        return any(_contains_value(v, wanted) for v in data)
    return data is not None and not isinstance(data, bool) and str(data) == wanted


def _others(call: ToolCall, batch: Sequence[ToolCall], names: frozenset[str]) -> list[str]:
    """Names of the other calls of ``batch`` that are in ``names`` (``*`` matches all)."""
    return [c.name for c in batch if c is not call and (ANY_TOOL in names or c.name in names)]


def _string_values(call: ToolCall) -> set[str]:
    return {v.strip().casefold() for v in call.arguments.values() if isinstance(v, str) and v.strip()}


def _either(names: frozenset[str]) -> str:
    return " or ".join(sorted(names))


@dataclass(frozen=True)
class PreconditionGate:
    """What every compiled precondition shares: the tools it gates and where it came from.

    Attributes:
        tools: names of the gated tools (the gate passes every other call untouched).
        skill: the skill that declared it (named in every message, so a block is traceable).
        when: ``always`` (active whenever the library is configured) or ``loaded`` (only once
            the skill is loaded: for requirements that depend on the user's intent).
        message: a fixed message replacing the generated one.
    """

    tools: frozenset[str]
    skill: str
    when: str = "always"
    message: str | None = None
    objective: ClassVar[bool] = False
    """Whether the gate verifies its precondition from results alone (a state it reads, a
    success it needs), so the planner's decision to make the call does not depend on reading
    those results. A harness may then run a call held only for its batch *after* the batch,
    once the gate passes on the real results. Not so for a toggle that depends on a state the
    planner had not seen yet, or a reply that depends on an inbox it had not read."""

    @property
    def references(self) -> frozenset[str]:
        """Tools the gate needs evidence from (it cannot be satisfied if none is exposed)."""
        return frozenset()

    def satisfiable(self, exposed: Sequence[str] | frozenset[str]) -> bool:
        """Whether a planner with ``exposed`` tools can ever meet the gate."""
        refs = self.references - {ANY_TOOL}
        return not refs or bool(refs & set(exposed))

    def check(self, call: ToolCall, batch: Sequence[ToolCall], history: Sequence[Any]) -> str | None:
        """None to allow ``call``; otherwise what the planner must do first."""
        if call.name not in self.tools:
            return None
        missing = self._missing(call, batch, history)
        if missing is None:
            return None
        return f"{self.message or missing} [precondition of skill {self.skill}]"

    def _missing(self, call: ToolCall, batch: Sequence[ToolCall], history: Sequence[Any]) -> str | None:
        raise NotImplementedError  # pragma: no cover


def _same_batch(call: ToolCall, others: list[str]) -> str:
    return (
        f"{', '.join(others)} is in the same batch as {call.name}, and calls of one batch run at the "
        f"same time; wait for its result, then call {call.name} in a later step"
    )


@dataclass(frozen=True)
class RequiresPriorSuccessGate(PreconditionGate):
    """The gated call needs an earlier successful call of one of ``needs``.

    With ``with_result_field`` the earlier result must also carry that field (a note saved
    *with its id returned*). With ``if_attempted`` the requirement holds only once one of
    ``needs`` was attempted in the session: "no pending write": a write that was tried must
    have succeeded before the gated call, and a plain power-off stays possible.
    """

    needs: frozenset[str] = frozenset()
    with_result_field: str | None = None
    if_attempted: bool = False
    objective: ClassVar[bool] = True

    @property
    def references(self) -> frozenset[str]:  # noqa: D102
        return self.needs

    def _missing(self, call: ToolCall, batch: Sequence[ToolCall], history: Sequence[Any]) -> str | None:
        others = _others(call, batch, self.needs)
        if others:
            return _same_batch(call, others)
        attempted = False
        for prior, result in executed_calls(history):
            if prior.name not in self.needs:
                continue
            attempted = True
            if result.ok and (self.with_result_field is None or _present(field_value(result.data, self.with_result_field))):
                return None
        if self.if_attempted and not attempted:
            return None
        what = f"a successful {_either(self.needs)}"
        if self.with_result_field:
            what += f" that returned its {self.with_result_field}"
        if attempted:
            return f"{what} must come first: the earlier attempt did not succeed; retry it and wait for the result"
        return f"{what} must come first, in an earlier step"


@dataclass(frozen=True)
class QueryBeforeToggleGate(PreconditionGate):
    """The gated toggle needs the state read first: an earlier successful call of ``query``."""

    query: frozenset[str] = frozenset()

    @property
    def references(self) -> frozenset[str]:  # noqa: D102
        return self.query

    def _missing(self, call: ToolCall, batch: Sequence[ToolCall], history: Sequence[Any]) -> str | None:
        # A state read in an earlier step was seen before this decision: a fresh read in the
        # same batch changes nothing (the 1.5B planner resends the whole held batch verbatim).
        if any(p.name in self.query and r.ok for p, r in executed_calls(history)):
            return None
        others = _others(call, batch, self.query)
        if others:
            return _same_batch(call, others)
        return f"read the current state with {_either(self.query)} first, then decide whether {call.name} is needed"


@dataclass(frozen=True)
class StopBeforeStartGate(PreconditionGate):
    """Starting needs the session known to be inactive (one live session at most, e.g. a cast).

    The state is tracked through the history: a successful ``status`` result sets it from its
    ``field``; a successful ``stop`` (or a ``stop`` failing with one of ``inactive_codes``, such
    as ``not_active``) makes it inactive; a successful start makes it active. Unknown state
    blocks too: the planner must look before it starts.
    """

    status: str = ""
    stop: str = ""
    field: str = "active"
    inactive_codes: frozenset[str] = frozenset({"not_active"})
    objective: ClassVar[bool] = True

    @property
    def references(self) -> frozenset[str]:  # noqa: D102
        return frozenset({self.status, self.stop})

    def _missing(self, call: ToolCall, batch: Sequence[ToolCall], history: Sequence[Any]) -> str | None:
        others = _others(call, batch, self.references | self.tools)
        if others:
            return _same_batch(call, others)
        active: bool | None = None
        for prior, result in executed_calls(history):
            if prior.name == self.status and result.ok:
                active = bool(field_value(result.data, self.field))
            elif prior.name == self.stop:
                if result.ok or (result.error is not None and result.error.code in self.inactive_codes):
                    active = False
            elif prior.name in self.tools and result.ok:
                active = True
        if active is None:
            return f"check whether one is already running with {self.status} (or end it with {self.stop}) first"
        if active:
            return f"one is already running: call {self.stop} first and wait for its result"
        return None


@dataclass(frozen=True)
class DependsOnResultGate(PreconditionGate):
    """The gated call depends on the result of ``waits_for``: it may not share their batch.

    With ``argument``, the value the call passes for that argument must have been returned by
    an earlier successful call of ``waits_for`` (an id is grounded in a result, not guessed).
    ``waits_for: ["*"]`` makes the gated call run alone in its batch.
    """

    waits_for: frozenset[str] = frozenset()
    argument: str | None = None

    @property
    def references(self) -> frozenset[str]:  # noqa: D102
        return self.waits_for if self.argument else frozenset()

    def repair(self, call: ToolCall, history: Sequence[Any]) -> ToolCall | None:
        """``call`` with its ``argument`` set to the id the latest ``waits_for`` result returned.

        For the harness's "exact next call" hint: when a planner guessed an id in the batch
        that created the object (``create_alarm`` + ``set_alarm_enabled(alarm_id="12345")``),
        the id it needs is the one the creating call returned. Only a single created object
        counts (a dict result with an ``id``); a listing is left to the planner to choose from.
        None when there is nothing to repair or no single id to repair it with.
        """
        if self.argument is None or call.name not in self.tools:
            return None
        for prior, result in reversed(list(executed_calls(history))):
            if not (result.ok and (ANY_TOOL in self.waits_for or prior.name in self.waits_for)):
                continue
            value = result.data.get("id") if isinstance(result.data, dict) else None
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                return None
            if str(call.arguments.get(self.argument)) == str(value):
                return None
            return call.model_copy(update={"arguments": {**call.arguments, self.argument: value}})
        return None

    def checked_in_batch(self, call: ToolCall, ran: Sequence[tuple[ToolCall, ToolResult]]) -> bool:
        """Whether the batch's waited-for calls only checked a value ``call`` already carries.

        ``lookup_contact(name="Sam")`` + ``send_sms(to="Sam", ...)`` in one batch: the lookup
        can only confirm or refute "Sam", and the send does not need anything else from it.
        When every waited-for call of the batch succeeded with one record (not a listing to
        choose from) and was asked about a value ``call`` passes too, the call stands as
        written once the batch is done, like an objective gate's (``sequence_holds``). Never
        for a gate with ``argument``: that call needs an id out of the result.
        """
        if self.argument is not None or call.name not in self.tools:
            return False
        waited = [(c, r) for c, r in ran if c is not call and (ANY_TOOL in self.waits_for or c.name in self.waits_for)]
        mine = _string_values(call)
        return bool(waited) and all(r.ok and isinstance(r.data, dict) and _string_values(c) & mine for c, r in waited)

    def _missing(self, call: ToolCall, batch: Sequence[ToolCall], history: Sequence[Any]) -> str | None:
        others = _others(call, batch, self.waits_for)
        if others:
            return _same_batch(call, others)
        if self.argument is None or call.arguments.get(self.argument) is None:
            return None
        wanted = str(call.arguments[self.argument])
        for prior, result in executed_calls(history):
            waited = ANY_TOOL in self.waits_for or prior.name in self.waits_for
            if waited and result.ok and _contains_value(result.data, wanted):
                return None
        return (
            f"{self.argument}={wanted!r} was not returned by an earlier {_either(self.waits_for)}; "
            f"call one first and use a value from its result"
        )
