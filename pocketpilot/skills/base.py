"""The skill protocols: the store a session loads skills from, and the gates skills enforce.

Optional abilities of a gate are protocols of their own (:class:`ObjectiveGate`,
:class:`ChecksInBatch`, :class:`RepairsCalls`), checked with ``isinstance``, so a gate that
lacks one is a type-checked case rather than a ``getattr`` probe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..contracts import ToolCall, ToolResult

__all__ = ["ChecksInBatch", "LoadedSkillView", "ObjectiveGate", "RepairsCalls", "SkillStore", "ToolGate"]


@runtime_checkable
class ToolGate(Protocol):
    """A hard precondition on tool calls, enforced by the harness rather than left to the prompt.

    Skills contribute gates when loaded (e.g. "a note is saved, with its id returned, before
    power_off"); an app may pass its own to the Session.
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


@runtime_checkable
class ObjectiveGate(Protocol):
    """A gate that verifies its precondition from results alone ("no cast is active").

    The sequencing policy may run a call such a gate held only for its batch right after the
    batch; a gate whose hold needs the planner to read a result first is not objective.
    """

    @property
    def objective(self) -> bool:
        """Whether the gate's hold depends only on calls and results, never on the planner's reading."""
        ...


@runtime_checkable
class ChecksInBatch(Protocol):
    """A gate that can tell when a batch's own results settled what it waited for."""

    def checked_in_batch(self, call: ToolCall, ran: Sequence[tuple[ToolCall, ToolResult]]) -> bool:
        """True when the batch's ``(call, result)`` pairs settled the precondition for ``call``."""
        ...


@runtime_checkable
class RepairsCalls(Protocol):
    """A gate that can propose the call that would pass it (the id a create returned, not a guess)."""

    def repair(self, call: ToolCall, history: Sequence[Any]) -> ToolCall | None:
        """The call that would pass the gate, built from ``history``; None when there is none to propose."""
        ...


@runtime_checkable
class LoadedSkillView(Protocol):
    """What a session reads from a loaded skill."""

    guidance: str
    exposes: list[str]
    gates: list[ToolGate]


@runtime_checkable
class SkillStore(Protocol):
    """Skills the planner may load, with tools they expose and gates they enforce."""

    def available(self, exposed_tools: Sequence[str]) -> list[str]:
        """Skill names whose required tools are all exposed."""
        ...

    def load(self, name: str) -> LoadedSkillView:
        """Return the loaded skill (guidance text, exposed tools, gates)."""
        ...
