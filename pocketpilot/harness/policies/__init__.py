"""The harness's interventions, one policy each, and the sets every mode runs.

:func:`default_policies` is the one default: the library's ``Session``, ``pocketpilot run``
and the benchmark's harness mode all run it. :func:`safety_policies` is what bare mode keeps
(gates and confirmation); a session always runs those two, whatever set it is given. η names
the set it was compiled with (:func:`from_entries`), so a reviewed η revision can change a
policy or its parameters, not only a prompt line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ... import policy_registry
from ...policy_registry import PolicyError
from .asked_back import AskedBack
from .base import (
    Advice,
    Allow,
    BasePolicy,
    CallDecision,
    Hold,
    Policy,
    Rewrite,
    RunView,
    ShapesBatches,
    StepReport,
    Stop,
    StopAction,
)
from .confirmation import Confirmation, OnDenial
from .experience_hints import ExperienceHints
from .gates import Gates, HeldCalls
from .id_for_name import IdForName
from .loop_guard import LoopGuard
from .reads_apart import ReadsApart
from .repeat_delegation import RepeatDelegation
from .repeat_failure import RepeatFailure
from .scope_guard import ScopeGuard
from .send_back import SendBack
from .undo_guard import UndoGuard

__all__ = [
    "REGISTRY",
    "Advice",
    "Allow",
    "AskedBack",
    "BasePolicy",
    "CallDecision",
    "Confirmation",
    "ExperienceHints",
    "Gates",
    "HeldCalls",
    "Hold",
    "IdForName",
    "LoopGuard",
    "OnDenial",
    "Policy",
    "PolicyError",
    "ReadsApart",
    "RepeatDelegation",
    "RepeatFailure",
    "Rewrite",
    "RunView",
    "ScopeGuard",
    "SendBack",
    "ShapesBatches",
    "StepReport",
    "Stop",
    "StopAction",
    "UndoGuard",
    "batch_groups",
    "default_entries",
    "default_policies",
    "describe",
    "from_entries",
    "in_force",
    "safety_policies",
]

REGISTRY: dict[str, type[BasePolicy]] = {
    cls.name: policy_registry.register(cls)
    for cls in (IdForName, ReadsApart, Gates, ScopeGuard, UndoGuard, LoopGuard, RepeatFailure, HeldCalls, SendBack,
                ExperienceHints, AskedBack, RepeatDelegation, Confirmation)
}
"""Policies by the name η uses. Order matters for ``before_call``: a rewrite comes first (the
gates judge the call that will run), confirmation last (the user is asked only about calls
that would otherwise run)."""


def default_policies(*, on_denial: OnDenial = "stop") -> list[Policy]:
    """The one default set, in order; ``on_denial`` is :class:`Confirmation`'s (a denial ends the
    run by default; ``"hold"`` lets the planner go on without the refused call).
    """
    return [IdForName(), Gates(), ScopeGuard(), UndoGuard(), LoopGuard(), RepeatFailure(), HeldCalls(),
            SendBack(), AskedBack(), Confirmation(on_denial=on_denial)]


def safety_policies(*, on_denial: OnDenial = "stop") -> list[Policy]:
    """What bare mode keeps: hard preconditions and confirmation."""
    return [Gates(), Confirmation(on_denial=on_denial)]


def batch_groups(policies: Iterable[Policy], run: RunView) -> list[list[str]]:
    """The batch groups every policy that shapes batches asks for, together: two tools share a
    group only where every such policy puts them in one.
    """
    groups: list[list[str]] = []
    for policy in policies:
        if not isinstance(policy, ShapesBatches):
            continue
        asked = [g for g in policy.batch_groups(run) if g]
        if len(asked) < 2:
            continue
        if not groups:
            groups = asked
            continue
        sets = [set(a) for a in asked]
        groups = [both for g in groups for a in sets if (both := [n for n in g if n in a])]
    return groups if len(groups) > 1 else []


def describe(policies: Iterable[Policy]) -> list[dict[str, Any]]:
    """``[{"name": ..., "params": {...}}]``: the form η and the trace header record."""
    return [{"name": p.name, "params": p.params()} for p in policies]


def default_entries() -> list[dict[str, Any]]:
    """The default set in η's form."""
    return describe(default_policies())


def from_entries(entries: Sequence[Mapping[str, Any]]) -> list[Policy]:
    """Build policies from η's entries (``name`` plus ``params``).

    Raises:
        PolicyError: an unknown name, or parameters the policy does not take.
    """
    return policy_registry.build(entries)


policy_registry.set_defaults(default_entries)  # what η records when it names no set


def in_force(policies: Sequence[Policy] | None) -> list[Policy]:
    """Fresh copies of ``policies`` (the default set for None), with the safety policies added
    where missing: gates first, confirmation last. No set given to a session can switch off a
    hard precondition or a confirmation.
    """
    chosen = [p.fork() for p in (default_policies() if policies is None else policies)]
    if not any(p.name == Gates.name for p in chosen):
        chosen.insert(0, Gates())
    confirm = [p for p in chosen if p.name == Confirmation.name] or [Confirmation()]
    return [p for p in chosen if p.name != Confirmation.name] + confirm[:1]
