"""η's ``delegation`` section: how the harness briefs a sub-agent a delegate action starts.

A small planner fills a delegate's structured slots badly: on the dev and evolve hand-off tasks
it listed a tool of the right app but not the one the child needed (or not the lookup that
finds the record's id), and most first delegations carried artifacts it invented before any id
existed (placeholders, a record's name as its id, a number the request never said). The child
saw only that instruction, those tools and no guidance. Each switch below lets the harness
derive or check a slot from declarations instead (the brief is built by
:mod:`pocketpilot.harness.brief`):

- ``app_tools``: the child gets the listed tools plus every tool of the same apps (η's declared
  ``ToolEntry.app``), among the tools the parent session holds;
- ``app_lookups``: the child gets the listed tools plus only the *read-only* tools of the same
  apps: the lookups that find a record's id, without the app's other changes, which a small
  child given them used beyond its part (``app_tools`` wins when both are on);
- ``show_request``: the child's first message shows the user's request verbatim, marked as
  context, then the parent's instruction as its part;
- ``guidance``: the child gets the adapter's guidance filtered to its own tools, as the parent
  does (notes about delegating and loading skills left out: the child can do neither);
- ``grounded_artifacts``: an artifact value is kept only if it occurs in the user's request, in
  an earlier tool result of the episode, is a known artifact, or is a value a child tool's
  schema declares for that argument (an ``enum``); under a key that is a child
  tool's declared ``id_arg``, only ids seen in results are kept; the parent is told what was
  dropped;
- ``carry_ids``: the ids a confirmed earlier child surfaced are merged into each later
  delegation's artifacts, and the executed action records them.
- ``hand_back_reads``: a confirmed child's result carries the data of its successful read-only
  calls (read-only as declared), within a size budget, beside its summary and answer: on the
  dev hand-off tasks no value a child read reached its parent, the summary left it out.

Each is a hypothesis until dev measures it (``bench/bench_handoff.py``), so every switch is off
unless the section turns it on, and an η without the section (None) runs as before and hashes
as it did before the section existed. The adapters never import the harness: the kit hands the
section, the tools' apps and the child's guidance filter to the session as a
:class:`DelegationPlan`, which the harness reads through its ``Handoff`` protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import BaseModel, ConfigDict

from ._content import OmitAtDefault

__all__ = ["SWITCHES", "DelegationPlan", "DelegationSettings"]

class DelegationSettings(BaseModel):
    """The hand-off switches η runs under (see the module docstring); a key left out is off.

    Every field is a switch, declared here only: :data:`SWITCHES` and :class:`DelegationPlan`
    read them from this model, so a new switch is one field (and the harness's use of it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    app_tools: bool = False
    app_lookups: Annotated[bool, OmitAtDefault()] = False
    show_request: bool = False
    guidance: bool = False
    grounded_artifacts: bool = False
    carry_ids: bool = False
    hand_back_reads: Annotated[bool, OmitAtDefault()] = False

    @classmethod
    def all_on(cls) -> DelegationSettings:
        """Every switch on (the bench's ``on`` variant)."""
        return cls(**dict.fromkeys(SWITCHES, True))


SWITCHES: tuple[str, ...] = tuple(DelegationSettings.model_fields)
"""The section's switches, in the order the module docstring explains them (the fields' own order)."""


def _no_guidance(tools: Sequence[str]) -> list[str]:
    return []


@dataclass(frozen=True)
class DelegationPlan:
    """The section as a session reads it: the switches, each tool's app, the child's guidance.

    Satisfies the harness's ``Handoff`` protocol (:mod:`pocketpilot.harness.brief`). The
    switches are held as η's own settings, so a switch is declared once, on
    :class:`DelegationSettings`.
    """

    settings: DelegationSettings = field(default_factory=DelegationSettings)
    """The switches η runs under."""
    apps: Mapping[str, str] = field(default_factory=dict)
    """Each tool's declared app (η's ``ToolEntry.app``); a tool without one is in no app."""
    child_guidance: Callable[[Sequence[str]], list[str]] = _no_guidance
    """Guidance filtered to a child's tools (the adapter's filter, without the notes on
    delegating and loading skills)."""

    @classmethod
    def of(cls, settings: DelegationSettings, apps: Mapping[str, str],
           child_guidance: Callable[[Sequence[str]], list[str]] | None = None) -> DelegationPlan:
        """The plan for ``settings`` over the tools' ``apps``."""
        return cls(settings=settings, apps=dict(apps), child_guidance=child_guidance or _no_guidance)
