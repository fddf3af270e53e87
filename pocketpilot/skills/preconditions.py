"""The precondition vocabulary of SKILL.md front matter, compiled to gates.

Four kinds, each naming the gated ``tool`` (a name or a list), composable by listing several::

    preconditions:
      # a note saved, with its id returned, before power off
      - requires_prior_success: {tool: power_off, needs: create_note, with_result_field: id}
      # no pending write: any write tried in the session succeeded before power off
      - requires_prior_success: {tool: power_off, needs: [create_note, send_sms], if_attempted: true}
      # an active cast is stopped before a new one starts
      - stop_before_start: {tool: start_cast, status: get_cast_status, stop: stop_cast}
      # the state is read before a conditional toggle
      - query_before_toggle: {tool: [set_wifi, set_bluetooth], query: get_settings}
      # a dependent call waits for its result (never in the same batch; id grounded in a result)
      - depends_on_result: {tool: read_note, waits_for: [search_notes, list_notes], argument: note_id}

Common keys: ``when`` (``always``, the default: enforced whenever the library is configured,
whether or not the skill was loaded: preconditions attach to *tools*; ``loaded``: only after the
planner loaded the skill, for requirements that depend on the user's intent) and ``message``
(replaces the generated explanation). The long form ``{kind: stop_before_start, tool: ...}`` is
accepted too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from .gates import (
    DependsOnResultGate,
    PreconditionGate,
    QueryBeforeToggleGate,
    RequiresPriorSuccessGate,
    StopBeforeStartGate,
)

__all__ = [
    "PRECONDITION_KINDS",
    "DependsOnResult",
    "Precondition",
    "QueryBeforeToggle",
    "RequiresPriorSuccess",
    "StopBeforeStart",
    "normalize_precondition",
]

_TOOL = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"


def _names(value: Any) -> Any:
    """Accept one tool name or a list of them."""
    return [value] if isinstance(value, str) else value


class _Base(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: list[Annotated[str, Field(pattern=_TOOL)]] = Field(min_length=1)
    when: Literal["always", "loaded"] = "always"
    message: str | None = Field(default=None, min_length=1, max_length=300)

    _normalize_tool = field_validator("tool", mode="before")(_names)

    def tools_referenced(self) -> set[str]:
        """Every tool name the precondition mentions (gated or needed)."""
        return set(self.tool)

    def _common(self, skill: str) -> dict[str, Any]:
        return {"tools": frozenset(self.tool), "skill": skill, "when": self.when, "message": self.message}

    def compile(self, skill: str) -> PreconditionGate:
        """The gate enforcing this precondition; ``skill`` is named in its messages."""
        raise NotImplementedError  # pragma: no cover


class RequiresPriorSuccess(_Base):
    """``tool`` needs an earlier successful ``needs`` call (optionally returning a field)."""

    kind: Literal["requires_prior_success"] = "requires_prior_success"
    needs: list[Annotated[str, Field(pattern=_TOOL)]] = Field(min_length=1)
    with_result_field: str | None = Field(default=None, min_length=1, max_length=64)
    if_attempted: bool = False

    _normalize_needs = field_validator("needs", mode="before")(_names)

    def tools_referenced(self) -> set[str]:  # noqa: D102
        return set(self.tool) | set(self.needs)

    def compile(self, skill: str) -> PreconditionGate:  # noqa: D102
        return RequiresPriorSuccessGate(
            **self._common(skill),
            needs=frozenset(self.needs),
            with_result_field=self.with_result_field,
            if_attempted=self.if_attempted,
        )


class QueryBeforeToggle(_Base):
    """``tool`` (a toggle) needs an earlier successful ``query`` call."""

    kind: Literal["query_before_toggle"] = "query_before_toggle"
    query: list[Annotated[str, Field(pattern=_TOOL)]] = Field(min_length=1)

    _normalize_query = field_validator("query", mode="before")(_names)

    def tools_referenced(self) -> set[str]:  # noqa: D102
        return set(self.tool) | set(self.query)

    def compile(self, skill: str) -> PreconditionGate:  # noqa: D102
        return QueryBeforeToggleGate(**self._common(skill), query=frozenset(self.query))


class StopBeforeStart(_Base):
    """``tool`` (a start) needs the single live session known inactive: queried or stopped."""

    kind: Literal["stop_before_start"] = "stop_before_start"
    status: str = Field(pattern=_TOOL)
    stop: str = Field(pattern=_TOOL)
    field: str = Field(default="active", min_length=1, max_length=64)
    inactive_codes: list[str] = Field(default_factory=lambda: ["not_active"])

    def tools_referenced(self) -> set[str]:  # noqa: D102
        return set(self.tool) | {self.status, self.stop}

    def compile(self, skill: str) -> PreconditionGate:  # noqa: D102
        return StopBeforeStartGate(
            **self._common(skill),
            status=self.status,
            stop=self.stop,
            field=self.field,
            inactive_codes=frozenset(self.inactive_codes),
        )


class DependsOnResult(_Base):
    """``tool`` waits for ``waits_for`` (never in its batch); ``argument`` must come from their results."""

    kind: Literal["depends_on_result"] = "depends_on_result"
    waits_for: list[Annotated[str, Field(pattern=r"^\*$|" + _TOOL)]] = Field(min_length=1)
    argument: str | None = Field(default=None, min_length=1, max_length=64)

    _normalize_waits_for = field_validator("waits_for", mode="before")(_names)

    @model_validator(mode="after")
    def _star_alone(self) -> DependsOnResult:
        if "*" in self.waits_for and len(self.waits_for) > 1:
            raise ValueError("'*' already means every other tool; list it alone")
        return self

    def tools_referenced(self) -> set[str]:  # noqa: D102
        return set(self.tool) | (set(self.waits_for) - {"*"})

    def compile(self, skill: str) -> PreconditionGate:  # noqa: D102
        return DependsOnResultGate(**self._common(skill), waits_for=frozenset(self.waits_for), argument=self.argument)


Precondition = Annotated[
    RequiresPriorSuccess | QueryBeforeToggle | StopBeforeStart | DependsOnResult,
    Field(discriminator="kind"),
]
PRECONDITION_ADAPTER: TypeAdapter[Precondition] = TypeAdapter(Precondition)
PRECONDITION_KINDS: tuple[str, ...] = (
    "requires_prior_success",
    "query_before_toggle",
    "stop_before_start",
    "depends_on_result",
)


def normalize_precondition(raw: Any) -> Any:
    """Turn the short form ``{kind_name: {...}}`` into ``{kind: kind_name, ...}``; leave others as is.

    Raises:
        ValueError: a short form with an unknown kind or a non-mapping body.
    """
    if not isinstance(raw, dict):
        return raw
    body = raw
    kind = raw.get("kind")
    if "kind" not in raw and len(raw) == 1:
        ((kind, body),) = raw.items()
        if kind not in PRECONDITION_KINDS:
            raise ValueError(f"unknown precondition kind {kind!r}; use one of: {', '.join(PRECONDITION_KINDS)}")
        if not isinstance(body, dict):
            raise ValueError(f"{kind} needs a mapping of its keys (tool, ...), not {type(body).__name__}")
    bad = [k for k in body if not isinstance(k, str)]
    if bad:
        raise ValueError(f"{kind} has a non-text key {bad[0]!r}: YAML reads on/off/yes/no as booleans; quote the key")
    return body if body is raw else {"kind": kind, **body}
