"""RL groups from episodes: G rollouts of one task with success, verified progress, cost and
the behaviour policy that produced them.

A GRPO-style trainer normalizes rewards within a group of rollouts of the same task, and an
off-policy correction needs the behaviour policy's token log-probs. Both come straight from the
trace: ``Verdict.success`` / ``Verdict.progress`` (share of criteria met), the output tokens
and tool calls spent, and per planner turn the token ids and log-probs llama.cpp reported,
with the model file's sha256, quantization and sampler settings from the episode header.

By default only episodes with a ``task_id`` and a verdict join a group (no task, nothing to
compare against; no verdict, no reward). With ``include_unverified`` the runs no verifier
judged (a free ``pocketpilot run`` has no task, so no verdict) join too, with ``reward``,
``success`` and ``progress`` null rather than a made-up 0: a trainer that scores rollouts itself
(a reward model, a judge) can still use them, and one that needs a verdict can filter on
``verified``. Task-less runs are grouped by their request text. Episodes of one group are kept
in the order given; with ``group_size=G`` they are cut into groups of exactly G and a remainder
is dropped (logged).
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..contracts import Episode, ToolCallAction
from ..errors import UsageError
from ..tracing.trace import episode_to_openai
from .export_sft import normalize_message

__all__ = ["RlGroup", "Rollout", "episode_cost", "rl_groups", "rollout"]

logger = logging.getLogger(__name__)


class Rollout(BaseModel):
    """One episode as an RL sample."""

    model_config = ConfigDict(frozen=True)

    episode_id: str
    verified: bool
    """A verifier judged the run; when False, ``reward``, ``success`` and ``progress`` are None."""
    reward: float | None
    """The verifier's outcome reward (1.0 success, 0.0 failure) before any CARE shaping."""
    success: bool | None
    progress: float | None
    output_tokens: int
    tool_calls: int
    steps: int
    stop_reason: str | None
    behaviour: dict[str, Any]
    """backend, model, model_sha256, quant_type, adapter, sampler settings."""
    turns: list[dict[str, Any]]
    """Per planner turn: step, raw, token_ids, token_logprobs, finish_reason, token counts."""
    messages: list[dict[str, Any]]


class RlGroup(BaseModel):
    """G rollouts of one task."""

    model_config = ConfigDict(frozen=True)

    group_id: str
    task_id: str | None
    """None for a group of task-less runs (grouped by their request)."""
    size: int
    success_rate: float | None
    """Over the verified rollouts; None when none was verified."""
    behaviour_consistent: bool
    """All rollouts came from one model file and sampler (on-policy within the group)."""
    rollouts: list[Rollout]

    def row(self) -> dict[str, Any]:
        """The group as a plain dict (one JSONL line / one Parquet row)."""
        return self.model_dump(mode="json")


def episode_cost(episode: Episode) -> tuple[int, int]:
    """(output tokens, tool calls) of the episode, sub-agents included: what the run spent."""
    tokens = sum(s.planner.completion_tokens for s in episode.steps if s.planner is not None)
    calls = sum(len(s.action.calls) for s in episode.steps if isinstance(s.action, ToolCallAction))
    for step in episode.steps:
        for child in step.children:
            t, c = episode_cost(child)
            tokens, calls = tokens + t, calls + c
    return tokens, calls


def _behaviour(episode: Episode) -> dict[str, Any]:
    p = episode.header.planner
    return {
        "backend": p.backend,
        "model": p.model,
        "model_sha256": p.model_sha256,
        "quant_type": p.quant_type,
        "adapter": p.adapter,
        "sampler": p.sampler.model_dump(mode="json"),
    }


def rollout(episode: Episode, *, allow_unverified: bool = False) -> Rollout:
    """The RL view of one episode.

    Args:
        episode: The episode.
        allow_unverified: Accept an episode without a verdict (its reward is None).

    Raises:
        UsageError: the episode has no verdict and ``allow_unverified`` is False.
    """
    verdict = episode.verdict
    if verdict is None and not allow_unverified:
        raise UsageError(f"episode {episode.header.episode_id} has no verdict: it cannot be an RL rollout")
    tokens, calls = episode_cost(episode)
    turns = [
        {
            "step": s.index,
            "raw": s.planner.raw,
            "token_ids": list(s.planner.token_ids),
            "token_logprobs": [float(x) for x in s.planner.token_logprobs],
            "finish_reason": s.planner.finish_reason,
            "prompt_tokens": s.planner.prompt_tokens,
            "completion_tokens": s.planner.completion_tokens,
        }
        for s in episode.steps
        if s.planner is not None
    ]
    return Rollout(
        episode_id=episode.header.episode_id,
        verified=verdict is not None,
        reward=None if verdict is None else float(verdict.success),
        success=None if verdict is None else verdict.success,
        progress=None if verdict is None else verdict.progress,
        output_tokens=tokens,
        tool_calls=calls,
        steps=len(episode.steps),
        stop_reason=episode.stop_reason,
        behaviour=_behaviour(episode),
        turns=turns,
        messages=[normalize_message(m, None) for m in episode_to_openai(episode)],
    )


def _policy_key(r: Rollout) -> str:
    b = r.behaviour
    return f"{b['model_sha256'] or b['model']}|{b['quant_type']}|{b['adapter']}|{sorted(b['sampler'].items())}"


def rl_groups(
    episodes: Iterable[Episode],
    *,
    group_size: int | None = None,
    min_size: int = 2,
    include_unverified: bool = False,
) -> list[RlGroup]:
    """Group rollouts by task.

    Args:
        episodes: Episodes in any order; those without ``task_id`` or verdict are skipped
            unless ``include_unverified``.
        group_size: Cut each task's rollouts into groups of exactly this many (remainder
            dropped); None keeps all of a task's rollouts in one group.
        min_size: Groups smaller than this are dropped (a group of one has no baseline).
        include_unverified: Keep episodes without a verdict (reward None), task-less ones
            grouped by request.

    Raises:
        UsageError: ``group_size`` or ``min_size`` below 1.
    """
    if (group_size is not None and group_size < 1) or min_size < 1:
        raise UsageError("group_size and min_size must be >= 1")
    by_task: dict[tuple[str, str], list[Rollout]] = defaultdict(list)
    skipped = 0
    for ep in episodes:
        if not include_unverified and (ep.header.task_id is None or ep.verdict is None):
            skipped += 1
            continue
        key = ("task", ep.header.task_id) if ep.header.task_id is not None else ("request", ep.header.request)
        by_task[key].append(rollout(ep, allow_unverified=include_unverified))
    if skipped:
        logger.info("%d episode(s) without task id or verdict left out of RL groups", skipped)
    groups: list[RlGroup] = []
    for key in sorted(by_task):
        items = by_task[key]
        task_id = key[1] if key[0] == "task" else None
        chunks = [items] if group_size is None else [
            items[i : i + group_size] for i in range(0, len(items) - group_size + 1, group_size)
        ]
        dropped = len(items) - sum(len(c) for c in chunks)
        if dropped:
            logger.info("group %s: %d rollout(s) beyond a multiple of G=%s dropped", key[1], dropped, group_size)
        for chunk in chunks:
            if len(chunk) < min_size:
                logger.info("group %s: %d rollout(s) below min_size %d dropped", key[1], len(chunk), min_size)
                continue
            gid = hashlib.sha256("|".join([key[1], *(r.episode_id for r in chunk)]).encode()).hexdigest()[:16]
            judged = [r.success for r in chunk if r.success is not None]
            groups.append(
                RlGroup(
                    group_id=gid,
                    task_id=task_id,
                    size=len(chunk),
                    success_rate=sum(judged) / len(judged) if judged else None,
                    behaviour_consistent=len({_policy_key(r) for r in chunk}) == 1,
                    rollouts=chunk,
                )
            )
    return groups
