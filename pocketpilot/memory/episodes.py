"""Turn a finished episode's trace into episodic memory candidates, without an LLM.

One summary per episode (request, tools used, outcome, verdict) plus one item per successful
tool call that returned data. Memories recalled into the episode's context are not captured
again: their text never enters a candidate, and anything equal to a recalled item is refused
by the store's recall tags.
"""

from __future__ import annotations

import json
from typing import Any

from ..contracts import Episode, ToolCallAction
from .models import MAX_CONTENT_CHARS, MemoryCandidate, Provenance

__all__ = ["MAX_TOOL_ITEMS", "episode_candidates"]

MAX_TOOL_ITEMS = 20
_SUMMARY_CHARS = 800
_DATA_CHARS = 300


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def episode_candidates(episode: Episode, session_id: str | None = None) -> list[MemoryCandidate]:
    """Episodic candidates for ``episode`` (summary first, then tool results)."""
    header = episode.header
    session = session_id or header.episode_id
    evidence = f"episode:{header.episode_id}"
    calls = episode.tool_calls()
    tools = list(dict.fromkeys(call.name for _, call, _ in calls))
    outcome = episode.stop_reason or "unfinished"
    if episode.verdict is not None:
        outcome += f", verified {'success' if episode.verdict.success else 'failure'}"
        outcome += f" ({episode.verdict.progress:.0%} of criteria)"
    parts = [f"Task: {_short(header.request, 300)}.", f"Outcome: {outcome}."]
    if tools:
        parts.append(f"Tools used: {', '.join(tools)}.")
    if episode.stop_detail:
        parts.append(f"Detail: {_short(episode.stop_detail, 200)}.")
    ended = episode.ended_at or (episode.steps[-1].started_at if episode.steps else header.started_at)
    success = episode.verdict.success if episode.verdict is not None else None
    out = [
        MemoryCandidate(
            content=_short(" ".join(parts), _SUMMARY_CHARS),
            tier="episodic",
            category="episode",
            importance=0.6 if success else 0.5,
            provenance=Provenance(source="episode", session_id=session, observed_at=ended, evidence=evidence),
        )
    ]
    steps = {s.index: s for s in episode.steps}
    for step_index, call, result in calls:
        if len(out) > MAX_TOOL_ITEMS or result is None or not result.ok or result.data in (None, "", {}, []):
            continue
        step = steps.get(step_index)
        if step is not None and not isinstance(step.action, ToolCallAction):
            continue
        text = f"{call.name}({_short(call.arguments, 200)}) returned {_short(result.data, _DATA_CHARS)}"
        out.append(
            MemoryCandidate(
                content=text[:MAX_CONTENT_CHARS],
                tier="episodic",
                category="tool_result",
                importance=0.4,
                provenance=Provenance(
                    source="tool_result",
                    session_id=session,
                    step=step_index,
                    observed_at=step.started_at if step is not None else ended,
                    evidence=f"{evidence}/step:{step_index}/{call.name}",
                    trust=0.8 if not result.simulated else 0.5,
                ),
            )
        )
    return out
