"""Consistency checks a simulated result must pass before anyone sees it.

A model asked twice about the same thing may answer differently, and it may invent ids. The
planner would then act on a world that contradicts itself, and a trained policy would learn
from it. So every candidate result is checked against the recorded state and the earlier
simulated results:

- schema: the result matches the tool's declared result schema (``jsonschema``);
- same answer: a read-only tool asked again with the same arguments, with no state change in
  between, answers exactly as before;
- declared invariants: per tool, e.g. :class:`IdsExist` (ids the result references are known
  from the state or earlier results) and :class:`MatchesState` (a field equals a state value),
  or any :class:`Invariant` an app writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import jsonschema

from ...contracts import ToolCall

__all__ = [
    "IdsExist",
    "Invariant",
    "MatchesState",
    "Predicate",
    "SimRecord",
    "SimulationLog",
    "check_result",
    "collect_ids",
    "resolve_path",
]

_MISSING = object()


@dataclass(frozen=True)
class SimRecord:
    """One accepted simulated result and the state version it was produced under."""

    tool: str
    arguments: dict[str, Any]
    data: Any
    state_version: int
    read_only: bool


@dataclass
class SimulationLog:
    """The recorded state plus every accepted simulated result: what a new answer must agree with."""

    state: dict[str, Any] = field(default_factory=dict)
    records: list[SimRecord] = field(default_factory=list)
    state_version: int = 0
    """Bumped by every state-changing call and every external state update."""

    def earlier(self, tool: str, arguments: dict[str, Any]) -> SimRecord | None:
        """The latest accepted result of the same call under the current state version."""
        key = _canonical(arguments)
        for record in reversed(self.records):
            if record.state_version != self.state_version:
                return None
            if record.tool == tool and _canonical(record.arguments) == key:
                return record
        return None

    def known_ids(self) -> set[str]:
        """Every id in the state and in earlier results (values of ``id`` and ``*_id`` keys)."""
        ids = collect_ids(self.state)
        for record in self.records:
            ids |= collect_ids(record.data)
        return ids


@runtime_checkable
class Invariant(Protocol):
    """A rule a tool's simulated result must satisfy."""

    def check(self, call: ToolCall, data: Any, log: SimulationLog) -> str | None:
        """None when ``data`` is consistent, else why it is not (shown to the model on retry)."""
        ...


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def collect_ids(node: Any) -> set[str]:
    """Values of keys named ``id`` or ending in ``_id`` anywhere in ``node``, as strings."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if (
                (key == "id" or key.endswith("_id"))
                and isinstance(value, (str, int))
                and not isinstance(value, bool)
            ):
                found.add(str(value))
            found |= collect_ids(value)
    elif isinstance(node, list):
        for item in node:
            found |= collect_ids(item)
    return found


def resolve_path(node: Any, path: str) -> Iterator[Any]:
    """Values at a dotted path; ``*`` walks every item of a list (``orders.*.customer_id``)."""
    parts = [p for p in path.split(".") if p]

    def walk(value: Any, rest: list[str]) -> Iterator[Any]:
        if not rest:
            yield value
            return
        head, tail = rest[0], rest[1:]
        if head == "*":
            if isinstance(value, list):
                for item in value:
                    yield from walk(item, tail)
        elif isinstance(value, dict) and head in value:
            yield from walk(value[head], tail)
        elif isinstance(value, list) and head.isdigit() and int(head) < len(value):
            yield from walk(value[int(head)], tail)

    yield from walk(node, parts)


@dataclass(frozen=True)
class IdsExist:
    """Ids the result references at ``paths`` must already exist in the state or earlier results.

    Args:
        paths: dotted paths into the result (``*`` for list items), e.g. ``"order_id"``.
    """

    paths: tuple[str, ...]

    def __init__(self, *paths: str) -> None:
        object.__setattr__(self, "paths", paths)

    def check(self, call: ToolCall, data: Any, log: SimulationLog) -> str | None:
        """Reject references to ids nobody has seen."""
        known = log.known_ids()
        unknown = sorted({str(v) for p in self.paths for v in resolve_path(data, p) if str(v) not in known})
        if unknown:
            return f"references unknown ids {unknown}; use only ids from the state or earlier results"
        return None


@dataclass(frozen=True)
class MatchesState:
    """A result field, when present, equals a value of the recorded state.

    Args:
        result_path: dotted path into the result.
        state_path: dotted path into the state.
    """

    result_path: str
    state_path: str

    def check(self, call: ToolCall, data: Any, log: SimulationLog) -> str | None:
        """Reject a field that contradicts the state."""
        expected = next(resolve_path(log.state, self.state_path), _MISSING)
        if expected is _MISSING:
            return None
        for value in resolve_path(data, self.result_path):
            if value != expected:
                return f"{self.result_path} is {value!r} but the state says {expected!r}"
        return None


@dataclass(frozen=True)
class Predicate:
    """Any rule as a function ``(call, data, log) -> message | None``, with a name for logs."""

    name: str
    fn: Callable[[ToolCall, Any, SimulationLog], str | None]

    def check(self, call: ToolCall, data: Any, log: SimulationLog) -> str | None:
        """Delegate to ``fn``."""
        return self.fn(call, data, log)


def check_result(
    call: ToolCall,
    data: Any,
    *,
    schema: dict[str, Any] | None,
    read_only: bool,
    invariants: Sequence[Invariant],
    log: SimulationLog,
) -> tuple[str, str] | None:
    """Check one candidate result; None if it may be used, else ``(code, reason)``.

    The code is ``simulation_invalid`` for a schema violation and ``simulation_inconsistent``
    for a contradiction with the state or earlier results.
    """
    if schema is not None:
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
        if error is not None:
            where = "/".join(map(str, error.absolute_path)) or "(result)"
            return "simulation_invalid", f"does not match the result schema at {where}: {error.message}"
    if read_only:
        earlier = log.earlier(call.name, call.arguments)
        if earlier is not None and _canonical(earlier.data) != _canonical(data):
            return (
                "simulation_inconsistent",
                f"the same query answered {_canonical(earlier.data)[:300]} before and nothing changed since",
            )
    for invariant in invariants:
        problem = invariant.check(call, data, log)
        if problem:
            return "simulation_inconsistent", problem
    return None
