"""Curation: turn verified episodes into training candidates, separately from verification.

The verifier judged each episode; curation decides whether the record is *fit to train on*.
Steps, per episode:

1. **normalize** — whitespace of the request and of free-text action fields collapsed; the
   content hash ignores what differs between identical runs (episode id, timestamps,
   durations, latencies, context digests).
2. **dedupe** — by that content hash; the first copy wins (the store also refuses a hash it
   already holds, so re-curating the same traces adds nothing).
3. **schema check** — the episode re-validates, step indices run 0..n-1, a tool_call step has
   one result per call, every successful call names a tool in the header. Failing → rejected.
4. **evidence check** — a ``finish`` judged successful must be backed by at least one
   successful tool result (a tool call, memory search or confirmed sub-agent); otherwise the
   verdict and the evidence disagree → review (``finish_without_evidence``).
5. **capability tags** — ``capability:``, ``group:``, ``split:`` from the task, ``tool:`` per
   tool used successfully, ``kind:`` per action kind.
6. **failure attribution** — :func:`~.diagnosis.diagnose` for failed episodes.

Review reasons (the record waits in the queue until a human decides):
``incomplete_trace``, ``no_verdict`` (low confidence); ``finish_without_evidence``,
``verdict_conflict`` (same request and actions, different verdicts), ``success_without_claim``
(success but the run stopped on a budget) (conflicting); ``destructive_tool``, ``pii:<kind>``,
``refusal``, ``simulated_feedback`` (safety-sensitive or low-trust evidence).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..contracts import Delegate, Episode, MemorySearch, Refuse, ToolCallAction
from ..tasks import TaskSpec
from .curation_pii import find_pii
from .diagnosis import diagnose

__all__ = [
    "CurationResult",
    "CuratedRecord",
    "Decision",
    "conflict_key",
    "content_hash",
    "curate",
    "curate_one",
    "evidence_check",
    "normalize_episode",
    "schema_check",
]

Decision = Literal["accept", "review", "reject"]
_WS = re.compile(r"\s+")
_VOLATILE = {"episode_id", "started_at", "ended_at", "duration_s", "latency_s", "context_digest", "parent_episode_id"}


class CuratedRecord(BaseModel):
    """One episode after curation."""

    model_config = ConfigDict(frozen=True)

    hash: str
    conflict_key: str
    episode: dict[str, Any]
    """The normalized episode (``Episode.model_dump(mode="json")``)."""
    complete: bool
    source: str
    task_id: str | None
    capability: str | None
    group: str | None
    split: str | None
    success: bool | None
    tags: list[str] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    """Why the record needs review (or was rejected)."""
    attribution: dict[str, Any] | None = None
    decision: Decision

    def to_episode(self) -> Episode:
        """The record's episode as a model."""
        return Episode.model_validate(self.episode)


class CurationResult(BaseModel):
    """Everything one curation pass produced."""

    model_config = ConfigDict(frozen=True)

    records: list[CuratedRecord]
    duplicates: int

    def by_decision(self, decision: Decision) -> list[CuratedRecord]:
        """Records with that decision."""
        return [r for r in self.records if r.decision == decision]


def _clean(text: str) -> str:
    return _WS.sub(" ", text).strip()


def normalize_episode(episode: Episode) -> Episode:
    """Collapse whitespace in the request and in free-text action fields (finish summaries,
    questions, refusal reasons); nothing else changes.
    """
    header = episode.header.model_copy(update={"request": _clean(episode.header.request)})
    steps = []
    for step in episode.steps:
        action = step.action
        if action is not None:
            updates = {
                f: _clean(getattr(action, f))
                for f in ("summary", "question", "reason", "query", "content", "instruction")
                if isinstance(getattr(action, f, None), str)
            }
            if updates:
                action = action.model_copy(update=updates)
        steps.append(step.model_copy(update={"action": action}))
    return episode.model_copy(update={"header": header, "steps": steps})


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in _VOLATILE}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def content_hash(episode: Episode) -> str:
    """sha256 of the episode's content, blind to ids, timestamps and timings."""
    return _hash(_strip(episode.model_dump(mode="json")))


def conflict_key(episode: Episode) -> str:
    """sha256 of (request, action sequence): two records with this key and different verdicts conflict."""
    actions = [s.action.model_dump(mode="json") if s.action else None for s in episode.steps]
    return _hash([_clean(episode.header.request).lower(), actions])


def schema_check(episode: Episode) -> list[str]:
    """Problems that make the record unusable (empty when fine)."""
    problems: list[str] = []
    try:
        Episode.model_validate_json(episode.model_dump_json())
    except ValidationError as exc:
        problems.append(f"does not re-validate: {exc.error_count()} error(s)")
    if [s.index for s in episode.steps] != list(range(len(episode.steps))):
        problems.append("step indices are not 0..n-1")
    exposed = {t.name for t in episode.header.tools}
    for step in episode.steps:
        if isinstance(step.action, ToolCallAction):
            if len(step.results) != len(step.action.calls):
                problems.append(f"step {step.index}: {len(step.action.calls)} call(s) but {len(step.results)} result(s)")
                continue
            for call, res in zip(step.action.calls, step.results, strict=False):
                if res.ok and call.name not in exposed:
                    problems.append(f"step {step.index}: successful call of {call.name}, which the header does not expose")
    if not episode.steps:
        problems.append("no steps")
    return problems


def evidence_check(episode: Episode) -> bool:
    """Whether a successful finish is backed by at least one successful tool result.

    True for anything that is not a successful finish (nothing to back).
    """
    if episode.stop_reason != "finish" or episode.verdict is None or not episode.verdict.success:
        return True
    for step in episode.steps:
        if isinstance(step.action, (ToolCallAction, MemorySearch, Delegate)) and any(r.ok for r in step.results):
            return True
    return False


def _texts(episode: Episode) -> Iterable[str]:
    yield episode.header.request
    for step in episode.steps:
        if step.action is not None:
            yield json.dumps(step.action.model_dump(mode="json"), ensure_ascii=False)
        for r in step.results:
            yield json.dumps(r.model_dump(mode="json"), ensure_ascii=False, default=str)


def _safety(episode: Episode) -> list[str]:
    reasons: list[str] = []
    destructive = {t.name for t in episode.header.tools if t.needs_confirmation}
    if any(call.name in destructive and res is not None and res.ok for _, call, res in episode.tool_calls()):
        reasons.append("destructive_tool")
    pii: set[str] = set()
    for text in _texts(episode):
        pii.update(find_pii(text))
    reasons.extend(f"pii:{k}" for k in sorted(pii))
    if isinstance(episode.final_action, Refuse):
        reasons.append("refusal")
    if any(r.simulated for s in episode.steps for r in s.results):
        reasons.append("simulated_feedback")
    return reasons


def _tags(episode: Episode, task: TaskSpec | None) -> list[str]:
    tags: set[str] = set()
    if task is not None:
        tags.update({f"capability:{task.capability}", f"group:{task.group}", f"split:{task.split}"})
    for _, call, res in episode.tool_calls():
        if res is not None and res.ok:
            tags.add(f"tool:{call.name}")
    for step in episode.steps:
        if step.action is not None:
            tags.add(f"kind:{step.action.kind}")
    return sorted(tags)


def curate_one(
    episode: Episode,
    complete: bool = True,
    *,
    task: TaskSpec | None = None,
    source: str | None = None,
    known_tools: Sequence[str] | None = None,
) -> CuratedRecord:
    """Curate a single episode (no dedupe, no conflict detection: :func:`curate` does those)."""
    episode = normalize_episode(episode)
    reasons: list[str] = []
    problems = schema_check(episode)
    decision: Decision = "reject" if problems else "accept"
    reasons.extend(f"schema: {p}" for p in problems)
    attribution = None
    if not problems:
        if not complete:
            reasons.append("incomplete_trace")
        if episode.verdict is None:
            reasons.append("no_verdict")
        if not evidence_check(episode):
            reasons.append("finish_without_evidence")
        if episode.verdict is not None and episode.verdict.success and episode.stop_reason not in (
            "finish", "ask_user", "refuse"
        ):
            reasons.append("success_without_claim")
        reasons.extend(_safety(episode))
        diag = diagnose(episode, known_tools=known_tools)
        if diag.failed:
            attribution = {"side": diag.side, "category": diag.category, "steps": diag.evidence_steps}
        decision = "review" if reasons else "accept"
    return CuratedRecord(
        hash=content_hash(episode),
        conflict_key=conflict_key(episode),
        episode=episode.model_dump(mode="json"),
        complete=complete,
        source=source or ("sandbox" if task is not None else "deployment"),
        task_id=episode.header.task_id,
        capability=task.capability if task else None,
        group=task.group if task else None,
        split=task.split if task else None,
        success=episode.verdict.success if episode.verdict else None,
        tags=_tags(episode, task),
        reasons=reasons,
        attribution=attribution,
        decision=decision,
    )


def curate(
    items: Iterable[tuple[Episode, bool]],
    *,
    tasks: Sequence[TaskSpec] = (),
    source: str | None = None,
    known_tools: Sequence[str] | None = None,
) -> CurationResult:
    """Curate (episode, complete) pairs: normalize, dedupe, check, tag, attribute, route.

    Args:
        items: Episodes with their trace completeness (as :func:`~pocketpilot.tracing.trace.read_trace`
            returns them).
        tasks: Task specs to tag records with (by ``task_id``); unknown ids are tagged as
            ``deployment`` records.
        source: Overrides the record source (default ``sandbox`` for known tasks, else
            ``deployment``).
        known_tools: Passed to the diagnosis.
    """
    by_id = {t.id: t for t in tasks}
    seen: set[str] = set()
    records: list[CuratedRecord] = []
    duplicates = 0
    for episode, complete in items:
        rec = curate_one(
            episode, complete, task=by_id.get(episode.header.task_id or ""), source=source, known_tools=known_tools
        )
        if rec.hash in seen:
            duplicates += 1
            continue
        seen.add(rec.hash)
        records.append(rec)
    outcomes: dict[str, set[bool | None]] = {}
    for rec in records:
        outcomes.setdefault(rec.conflict_key, set()).add(rec.success)
    out: list[CuratedRecord] = []
    for rec in records:
        if rec.decision != "reject" and len(outcomes[rec.conflict_key] - {None}) > 1:
            rec = rec.model_copy(update={"reasons": [*rec.reasons, "verdict_conflict"], "decision": "review"})
        out.append(rec)
    return CurationResult(records=out, duplicates=duplicates)
