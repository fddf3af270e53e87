"""Count precondition violations that reached the executor, after the fact.

The benchmark's target is "0 violations of a declared precondition reach the executor". The
gates should make that true by construction; this audit checks it independently on the
recorded episode: every call the harness let through is re-checked against the gates that
were in force at that step, with the history as it stood then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..contracts import Episode, LoadSkill, Step, ToolCall, ToolCallAction, ToolSpec
from .gates import PreconditionGate
from .library import SkillLibrary

__all__ = ["HARNESS_BLOCK_CODES", "Violation", "audit_episode"]

HARNESS_BLOCK_CODES = frozenset({"precondition_failed", "unknown_tool", "confirmation_denied", "not_allowed"})
"""Error codes the harness itself answers with: such a call never reached the executor."""


@dataclass(frozen=True)
class Violation:
    """A call that reached the executor although a gate in force would have blocked it."""

    episode_id: str
    step: int
    call: ToolCall
    skill: str
    message: str


def _in_force(library: SkillLibrary, steps: Sequence[Step], exposed: Sequence[str | ToolSpec] | None) -> list[PreconditionGate]:
    gates: list[PreconditionGate] = [g for g in library.always_on_gates(exposed) if isinstance(g, PreconditionGate)]
    for step in steps:
        if isinstance(step.action, LoadSkill) and step.results and step.results[0].ok and step.action.name in library:
            gates.extend(library.get(step.action.name).gates)
    return gates


def audit_episode(
    episode: Episode, library: SkillLibrary, *, exposed_tools: Sequence[str | ToolSpec] | None = None
) -> list[Violation]:
    """Violations of ``library``'s preconditions that reached the executor in ``episode``.

    Args:
        episode: a finished episode (sub-agent episodes in ``Step.children`` are audited too).
        library: the skills whose preconditions were declared for the run.
        exposed_tools: the session's starting tools (defaults to the tools in the header, with
            the worlds they declare), which decide the always-on gates exactly as the session did.
    """
    exposed = exposed_tools if exposed_tools is not None else list(episode.header.tools)
    out: list[Violation] = []
    for i, step in enumerate(episode.steps):
        for child in step.children:
            out.extend(audit_episode(child, library))
        if not isinstance(step.action, ToolCallAction):
            continue
        gates = _in_force(library, episode.steps[:i], exposed)
        batch = step.action.calls
        for call, result in zip(batch, step.results, strict=False):
            if result.error is not None and result.error.code in HARNESS_BLOCK_CODES:
                continue
            for gate in gates:
                message = gate.check(call, batch, episode.steps[:i])
                if message:
                    out.append(Violation(episode.header.episode_id, step.index, call, gate.skill, message))
    return out
