"""The brief a sub-agent starts from: the tools, values and context a delegate action hands over.

A delegate's slots are written by the planner, and a small planner fills them badly: a tool of
the right app but not the one the child needs (or not the lookup that finds a record's id),
artifacts invented before any id existed. The child then sees that instruction and those tools
alone. Under a :class:`Handoff` (η's ``delegation`` section, :mod:`pocketpilot.adapters.delegation`)
the harness derives or checks each slot from declarations before the child starts:

- **tools**: the listed tools plus every tool of the same apps (the declared app of each tool),
  among the tools the parent holds, up to what a delegate may list;
- **artifacts**: a value is kept only where it occurs in the user's request or in an earlier
  tool result of the episode (the parent's, or a confirmed child's), is an artifact a
  confirmed child surfaced, or is a value a child tool's schema declares for that argument
  (an ``enum``); under a key that is a child tool's declared ``id_arg``, only the ids
  of records seen in results (``ToolSpec.id_field``) or surfaced by a confirmed child. What is
  dropped is told to the parent in one notice;
- **carried ids**: the artifacts a confirmed earlier child surfaced are merged in;
- **the first message**: the user's request verbatim, marked as context, then the instruction
  as the child's part, then the artifacts as a labelled block of their own.

The delegate as briefed is what the step records (``Routed.executed``), so the trace and the
``delegated`` criterion see what the child got. Nothing here reads a tool's name for what it
does: only the declared app, ``id_arg`` and ``id_field``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from annotated_types import MaxLen

from ..contracts import Delegate, Episode, Notice, Step, ToolCallAction, ToolSpec
from ..handoff import review_handoff
from .actions import artifacts as surfaced
from .policies._text import records

__all__ = ["Brief", "Handoff", "HandoffSwitches", "brief_message", "prepare_brief"]

MAX_TOOLS = next(m.max_length for m in Delegate.model_fields["tools"].metadata if isinstance(m, MaxLen))
"""Most tools a delegate may list (the contract's bound): the app closure stops there."""


class HandoffSwitches(Protocol):
    """Which slots the harness derives or checks; each switch off leaves its slot as the planner wrote it."""

    @property
    def app_tools(self) -> bool:
        """The child gets every held tool of the listed tools' apps."""

    @property
    def app_lookups(self) -> bool:
        """The child gets the read-only held tools of the listed tools' apps (not their other changes)."""

    @property
    def show_request(self) -> bool:
        """The child's first message shows the user's request as context."""

    @property
    def guidance(self) -> bool:
        """The child gets guidance over its own tools (:meth:`Handoff.child_guidance`)."""

    @property
    def grounded_artifacts(self) -> bool:
        """Artifacts nothing in the request or the results grounds are dropped."""

    @property
    def carry_ids(self) -> bool:
        """Artifacts confirmed earlier children surfaced are handed over too."""

    @property
    def hand_back_reads(self) -> bool:
        """A confirmed child's result carries the data of its read-only calls (:func:`.actions.child_reads`)."""


class Handoff(Protocol):
    """How the harness briefs a sub-agent: the switches, each tool's app, the child's guidance."""

    @property
    def settings(self) -> HandoffSwitches:
        """The switches (η's ``delegation`` section)."""

    @property
    def apps(self) -> Mapping[str, str]:
        """Each tool's declared app."""

    def child_guidance(self, tools: Sequence[str]) -> list[str]:
        """Guidance lines for a child holding ``tools``."""


@dataclass(frozen=True)
class Brief:
    """A delegate as the harness hands it over."""

    action: Delegate
    """The delegate as run: tools closed over their apps, artifacts grounded, earlier ids carried."""
    message: str
    """The child's first message (its request)."""
    tools: dict[str, ToolSpec]
    """The tools the child may be given (the parent's shown tools, and those the closure added)."""
    notices: list[Notice] = field(default_factory=list)
    """Told to the parent with the delegate's result (dropped and carried artifacts)."""


@dataclass
class _Seen:
    """What the episode so far grounds: result texts, record ids, confirmed children's artifacts."""

    texts: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    surfaced: dict[str, str] = field(default_factory=dict)

    def add_results(self, calls: Sequence[tuple[Any, Any]], specs: Mapping[str, ToolSpec]) -> None:
        for call, result in calls:
            if result is None or not result.ok:
                continue
            self.texts.append(json.dumps(result.data, ensure_ascii=False, default=str))
            spec = specs.get(call.name) if call is not None else None
            if spec is not None:
                self.ids.update(str(r[spec.id_field]) for r in records(result.data, spec.id_field))


def _seen(steps: Sequence[Step], specs: Mapping[str, ToolSpec]) -> _Seen:
    seen = _Seen()
    for step in steps:
        if isinstance(step.action, ToolCallAction):
            seen.add_results(list(zip(step.action.calls, step.results, strict=False)), specs)
        elif step.action is not None and not isinstance(step.action, Delegate):  # memory results
            seen.add_results([(None, r) for r in step.results], specs)
        for child in step.children:
            if review_handoff(child).confirmed:
                seen.add_results([(c, r) for _, c, r in child.tool_calls()], _specs_of(child))
                seen.surfaced.update({k: v for k, v in surfaced(child).items() if k not in seen.surfaced})
    return seen


def _specs_of(episode: Episode) -> dict[str, ToolSpec]:
    specs = [*episode.header.tools, *(t for step in episode.steps for t in step.tools_added)]
    return {t.name: t for t in specs}


def _app_closure(listed: list[str], held: Mapping[str, ToolSpec], apps: Mapping[str, str], *,
                 reads_only: bool = False) -> list[str]:
    """The listed tools, then the other held tools of their apps (``reads_only``: the read-only
    ones alone), up to :data:`MAX_TOOLS`.

    The read-only ones come first: where the bound cuts the list, it keeps the lookups a child
    needs to find a record's id, and leaves out changes nobody listed.
    """
    wanted = {apps[n] for n in listed if apps.get(n)}
    extra = sorted((n for n in held if n not in listed and apps.get(n) in wanted
                    and (held[n].read_only or not reads_only)), key=lambda n: not held[n].read_only)
    return [*listed, *extra][: max(MAX_TOOLS, len(listed))]


def _allowed(tools: Sequence[ToolSpec], key: str) -> set[str]:
    """The values the child's tools declare for an argument named ``key`` (its schema's ``enum``)."""
    out: set[str] = set()
    for tool in tools:
        schema = (tool.parameters.get("properties") or {}).get(key)
        for branch in [schema, *((schema or {}).get("anyOf") or [])] if isinstance(schema, dict) else []:
            if isinstance(branch, dict):
                out.update(str(v) for v in branch.get("enum") or [])
    return out


def _ground(given: Mapping[str, str], *, request: str, seen: _Seen,
            tools: Sequence[ToolSpec]) -> tuple[dict[str, str], dict[str, str]]:
    """The artifacts the request, the episode's results or the child's schemas ground, and the others.

    A value one of the child's tools declares for that argument (an ``enum`` value: a metric, a
    unit) is grounded by the declaration; an id never is, whatever the request says.
    """
    haystack = [request.casefold(), *(t.casefold() for t in seen.texts)]
    known = set(seen.surfaced.values())
    id_args = {t.id_arg for t in tools if t.id_arg}
    kept: dict[str, str] = {}
    dropped: dict[str, str] = {}
    for key, value in given.items():
        v = value.strip()
        if not v:
            ok = False
        elif key in id_args:
            ok = v in seen.ids or v in known
        else:
            ok = v in known or v in _allowed(tools, key) or any(v.casefold() in text for text in haystack)
        (kept if ok else dropped)[key] = value
    return kept, dropped


def brief_message(instruction: str, artifacts: Mapping[str, str], request: str | None = None) -> str:
    """The child's first message: the user's request as context (when given), its part, its values."""
    parts = ([f"The user's request (context; you do only your part):\n{request}", f"Your part:\n{instruction}"]
             if request else [instruction])
    if artifacts:
        parts.append("Values handed over (use them as given):\n" + "\n".join(f"{k}: {v}" for k, v in artifacts.items()))
    return "\n\n".join(parts)


def prepare_brief(action: Delegate, handoff: Handoff, *, user_request: str, steps: Sequence[Step],
                  shown: Mapping[str, ToolSpec], held: Mapping[str, ToolSpec]) -> Brief:
    """Brief the sub-agent ``action`` starts, as ``handoff`` says (see the module docstring).

    Args:
        action: the delegate as the planner wrote it.
        handoff: the switches, the tools' apps and the child's guidance.
        user_request: the request the parent's run serves.
        steps: the parent's completed steps (its results, its children).
        shown: the tools the parent shows now (a delegate may list only these).
        held: every tool the parent's session holds (the app closure draws on these).
    """
    tools = list(action.tools)
    given: dict[str, ToolSpec] = dict(shown)
    switches = handoff.settings
    closes = switches.app_tools or switches.app_lookups
    if closes and tools and all(n in shown for n in tools):  # an unknown tool fails as before
        tools = _app_closure(tools, {**held, **shown}, handoff.apps, reads_only=not switches.app_tools)
        given.update({n: held[n] for n in tools if n not in given})
    child = [given[n] for n in (tools or list(shown)) if n in given]
    seen = _seen(steps, {**held, **shown})
    artifacts, notices = dict(action.artifacts), []
    if switches.grounded_artifacts:
        artifacts, dropped = _ground(artifacts, request=user_request, seen=seen, tools=child)
        if dropped:
            notices.append(Notice(
                "Left out of the hand-off, found neither in the request nor in a result: "
                + json.dumps(dropped, ensure_ascii=False)
                + ". Hand over an id only after a result returned it; the sub-agent can look it up with its tools.",
                policy="harness", code="artifacts_ungrounded"))
    if switches.carry_ids:
        carried = {k: v for k, v in seen.surfaced.items() if k not in artifacts and v not in artifacts.values()}
        if carried:
            artifacts.update(carried)
            notices.append(Notice("Handed over what earlier sub-agents returned: "
                                  + json.dumps(carried, ensure_ascii=False) + ".",
                                  policy="harness", code="artifacts_carried"))
    executed = action.model_copy(update={"tools": tools, "artifacts": artifacts})
    message = brief_message(action.instruction, artifacts, user_request if switches.show_request else None)
    return Brief(action=executed, message=message, tools=given, notices=notices)
