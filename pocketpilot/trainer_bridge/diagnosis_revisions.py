"""Harness-side findings → candidate revisions of η, rule-checked, and measured on the evolve split.

Diagnosis names what the harness got wrong; this module turns each group of harness-side
findings (same category, same tool) into a :class:`pocketpilot.adapters.Revision` against the
η the episodes ran under. A candidate is kept only if :func:`pocketpilot.adapters.apply_revision`
accepts it (the adapter's rule checks: right base version, known tools and skills, a real
change) and it has at least ``min_support`` episodes of evidence. Nothing here makes a
revision current: candidates are written as *pending* through
:class:`pocketpilot.adapters.RevisionStore` and take effect only after
``pocketpilot adapter approve``.

What each category proposes:

- ``missing_skill`` / ``conflicting_skill`` on tool T: map T to a skill of η that exposes or
  requires T (``map_tool``); if none does, a routing note telling the planner to satisfy T's
  precondition first, quoting the harness's own message.
- ``wrong_tool_exposure`` of T: a note (shown whatever is exposed) to ask the user rather
  than substitute another tool when T is needed but missing; exposure itself is the
  deployment's choice, not η's, and the rationale says so.
- ``retrieval_miss`` / ``stale_memory``: a memory note (shown only with memory configured).
- ``incomplete_feedback``: no η revision — the tool's error reporting must be fixed; it is
  reported as ``unrevisable``.

:func:`measure_on_evolve` runs the evolve split under η before and after a candidate, with the
same planner factory, and reports both success rates: the only evidence a reviewer should
approve on.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from ..adapters import (
    AddNote,
    Eta,
    MapTool,
    Revision,
    RevisionError,
    RoutingNote,
    apply_revision,
    render_diff,
)
from ..adapters.kit import session_kwargs
from ..errors import UsageError
from ..harness import AllowAll, HarnessConfig, Planner, Session
from ..tasks import TaskSpec, prepare
from .diagnosis import Diagnosis, Finding

__all__ = [
    "EvolveMeasurement",
    "RevisionCandidate",
    "measure_on_evolve",
    "propose_revisions",
]

logger = logging.getLogger(__name__)

_ID_CHARS = re.compile(r"[^a-z0-9_.-]+")


class RevisionCandidate(BaseModel):
    """A rule-checked candidate revision with its evidence and the η versions it links."""

    model_config = ConfigDict(frozen=True)

    revision: Revision
    category: str
    tool: str | None
    evidence: list[dict[str, object]]
    """Per supporting episode: episode_id, task_id, steps, detail."""
    base_version: str
    new_version: str
    diff: str


class EvolveMeasurement(BaseModel):
    """Success on the evolve split under η before and after a revision."""

    model_config = ConfigDict(frozen=True)

    tasks: list[str]
    before_version: str
    after_version: str
    before_success: list[bool]
    after_success: list[bool]

    @property
    def before_rate(self) -> float:
        """Success rate before."""
        return sum(self.before_success) / len(self.before_success)

    @property
    def after_rate(self) -> float:
        """Success rate after."""
        return sum(self.after_success) / len(self.after_success)

    @property
    def delta(self) -> float:
        """after − before."""
        return self.after_rate - self.before_rate


def _slug(text: str) -> str:
    return _ID_CHARS.sub("-", text.lower()).strip("-")[:40] or "x"


def _skill_for(eta: Eta, tool: str) -> str | None:
    """A skill of η that exposes or requires ``tool`` and is not yet mapped to it."""
    mapped = set(eta.tools[tool].skills) if tool in eta.tools else set()
    for name, entry in sorted(eta.skills.items()):
        if (tool in entry.exposes or tool in entry.requires) and name not in mapped:
            return name
    return None


def _ops(eta: Eta, category: str, tool: str | None, finding: Finding) -> tuple[list[object], str] | None:
    note_id = f"diag.{_slug(category)}" + (f".{_slug(tool)}" if tool else "")
    if category in ("missing_skill", "conflicting_skill") and tool:
        skill = _skill_for(eta, tool) if tool in eta.tools else None
        if skill is not None:
            return [MapTool(tool=tool, skill=skill)], f"map {tool} to skill {skill} so its procedure is offered"
        if tool not in eta.tools:
            return None
        text = f"Before calling {tool}, satisfy its precondition ({finding.detail})"[:400]
        return [AddNote(note=RoutingNote(id=note_id, text=text, requires_tools=[tool]))], "precondition note"
    if category == "wrong_tool_exposure" and tool:
        text = f"If the request needs {tool} and it is not among your tools, ask_user; do not substitute another tool."
        return (
            [AddNote(note=RoutingNote(id=note_id, text=text))],
            f"{tool} was needed but not exposed; expose it in the deployment (outside η) as well",
        )
    if category == "retrieval_miss":
        text = "If memory_search finds nothing, search once more with the key nouns of the request before asking the user."
        return [AddNote(note=RoutingNote(id=note_id, text=text, requires_resources=["memory"]))], "retrieval retry note"
    if category == "stale_memory":
        text = "Trust the newest memory: one marked superseded, candidate or low-trust is not evidence; confirm with a tool."
        return [AddNote(note=RoutingNote(id=note_id, text=text, requires_resources=["memory"]))], "stale memory note"
    return None


def propose_revisions(
    diagnoses: Sequence[Diagnosis], eta: Eta, *, min_support: int = 1
) -> tuple[list[RevisionCandidate], list[str]]:
    """Candidate revisions of ``eta`` from the harness-side findings of ``diagnoses``.

    Only episodes that ran under ``eta`` (``eta_version`` equal, or unrecorded) count as
    evidence: a finding under an older η may already be fixed.

    Returns:
        (candidates that pass the rule checks, reasons for groups that produced none).
    """
    groups: dict[tuple[str, str | None], list[tuple[Diagnosis, Finding]]] = defaultdict(list)
    for diag in diagnoses:
        if not diag.failed or (diag.eta_version not in (None, eta.version)):
            continue
        for f in diag.findings:
            if f.side == "harness":
                groups[(f.category, f.tool)].append((diag, f))
    candidates: list[RevisionCandidate] = []
    skipped: list[str] = []
    for (category, tool), support in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        label = f"{category}" + (f" ({tool})" if tool else "")
        episodes = {d.episode_id for d, _ in support}
        if len(episodes) < min_support:
            skipped.append(f"{label}: {len(episodes)} episode(s) < min_support {min_support}")
            continue
        made = _ops(eta, category, tool, support[0][1])
        if made is None:
            skipped.append(f"{label}: no η revision addresses it (fix the tool or the deployment)")
            continue
        ops, why = made
        digest = hashlib.sha256(f"{eta.version}|{category}|{tool}|{sorted(episodes)}".encode()).hexdigest()[:8]
        rev = Revision(
            id=f"diag-{_slug(category)}-{digest}",
            base_version=eta.version,
            rationale=f"{label} in {len(episodes)} failed episode(s): {why}. e.g. {support[0][1].detail}"[:1000],
            ops=ops,  # type: ignore[arg-type]
            source="diagnosis",
        )
        try:
            new = apply_revision(eta, rev)
        except RevisionError as exc:
            skipped.append(f"{label}: fails the rule checks: {exc.reason}")
            continue
        evidence = [
            {"episode_id": d.episode_id, "task_id": d.task_id, "steps": f.steps, "detail": f.detail} for d, f in support
        ]
        candidates.append(
            RevisionCandidate(
                revision=rev,
                category=category,
                tool=tool,
                evidence=evidence,
                base_version=eta.version,
                new_version=new.version,
                diff=render_diff(eta, new),
            )
        )
    return candidates, skipped


async def measure_on_evolve(
    tasks: Sequence[TaskSpec],
    planner_factory: Callable[[TaskSpec, Eta], Planner],
    before: Eta,
    after: Eta,
) -> EvolveMeasurement:
    """Run every evolve task under ``before`` and under ``after``; report both success rates.

    Args:
        tasks: Evolve-split tasks only (the split revisions are judged on; never trained on).
        planner_factory: A fresh planner for (task, η): the same model for both runs.
        before: η the episodes ran under.
        after: η with the candidate applied.

    Raises:
        UsageError: no tasks, or a task outside the evolve split.
    """
    if not tasks:
        raise UsageError("measure_on_evolve needs at least one evolve task")
    wrong = [t.id for t in tasks if t.split != "evolve"]
    if wrong:
        raise UsageError(f"revisions are measured on the evolve split only; not evolve: {', '.join(wrong)}")
    results: dict[str, list[bool]] = {"before": [], "after": []}
    for label, eta in (("before", before), ("after", after)):
        for task in tasks:
            run = prepare(task)
            kwargs = session_kwargs(eta, run.executor.tools())
            session = Session(
                planner_factory(task, eta),
                run.executor,
                config=HarnessConfig(max_steps=task.max_steps),
                confirm=AllowAll(),
                verifier=run.verifier,
                task_id=task.id,
                **kwargs,
            )
            t0 = time.monotonic()
            episode = await session.run(task.goal)
            ok = bool(episode.verdict and episode.verdict.success)
            logger.info("evolve %s under η %s: %s (%.1fs)", task.id, eta.version, ok, time.monotonic() - t0)
            results[label].append(ok)
    return EvolveMeasurement(
        tasks=[t.id for t in tasks],
        before_version=before.version,
        after_version=after.version,
        before_success=results["before"],
        after_success=results["after"],
    )
