"""SFT records from episodes: OpenAI chat messages with tools and a per-turn train mask.

The unit is one episode. Its messages come from :func:`pocketpilot.tracing.trace.episode_to_openai`
(one assistant message per step, followed by the feedback the planner saw), so the trainer
sees exactly the history the planner saw. What the trainer *learns* is chosen per assistant
turn:

**Eligibility.** An episode contributes supervised turns only if its trace is complete and it
carries a verifier verdict with ``success=True``. Any other episode (no verdict, failed verdict,
torn trace) yields a record whose every turn is masked; :func:`sft_record` marks it
``eligible=False`` and the exporters skip it by default, except an unverified one
(``verified=False``, a free run), which ``export sft`` writes unless ``--require-verdict``.
Failed rollouts still train through the RL groups, where the verifier's reward speaks for them.

**Turn labels** (in an eligible episode), one per step, in order:

- ``invalid`` — the output did not parse as an action (``Step.action is None``): masked.
- ``erred`` — the action parsed but the environment or the harness answered with an error
  (a failed tool call in the batch, an unknown tool, a denied confirmation, a step-level
  error, an unknown skill): masked. The planner corrected it later, since the episode
  succeeded; the error *feedback* stays in context, so the model learns the recovery from it.
- ``recovery`` — the first clean turn after one or more ``invalid``/``erred`` turns:
  supervised. It is "verified" in two ways: its own results are all ``ok`` and the verifier
  accepted the episode it belongs to.
- ``ok`` — any other clean turn (every result ``ok``, no step error): supervised.
- ``final`` — the terminating finish / ask_user / refuse turn: supervised.

The mask rides in two forms trainers read: ``weight`` (0/1) on every assistant message (the
OpenAI fine-tuning convention; ``None`` on other roles) and ``train_mask``, a list aligned
with ``messages`` (1 only on supervised assistant messages).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..contracts import AskUser, Episode, Finish, Refuse, Step
from ..tracing.trace import episode_to_openai, episode_tools

__all__ = [
    "MESSAGE_KEYS",
    "SUPERVISED",
    "SftRecord",
    "TurnLabel",
    "is_eligible",
    "label_turns",
    "normalize_message",
    "sft_record",
]

TurnLabel = Literal["invalid", "erred", "recovery", "ok", "final"]
SUPERVISED: frozenset[str] = frozenset({"recovery", "ok", "final"})

MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "weight")
"""Every exported message carries exactly these keys, so Arrow infers one struct type."""


class SftRecord(BaseModel):
    """One episode as a supervised example."""

    model_config = ConfigDict(frozen=True)

    id: str
    """The episode id."""
    task_id: str | None
    messages: list[dict[str, Any]]
    tools: str
    """The exposed tools and the declared ``pp_`` harness actions, as a JSON string of the OpenAI
    ``tools`` list (``json.loads`` it): every function the messages call is declared there.
    A string, because tool parameter schemas differ in shape and would not share one Arrow
    type."""
    train_mask: list[int]
    turn_labels: list[str]
    eligible: bool
    verified: bool
    """A verifier judged the episode. An unverified one (a free run) has every turn masked; its
    ``turn_labels`` still say which turns were clean, for a trainer that trusts such runs."""
    model_sha256: str | None
    eta_version: str | None

    def row(self) -> dict[str, Any]:
        """The record as a plain dict (one JSONL line / one Parquet row)."""
        return self.model_dump(mode="json")


def _step_erred(step: Step) -> bool:
    if step.error is not None:
        return True
    return any(not r.ok for r in step.results)


def label_turns(episode: Episode) -> list[TurnLabel]:
    """One label per step (see the module docstring), regardless of eligibility."""
    labels: list[TurnLabel] = []
    after_error = False
    last = len(episode.steps) - 1
    for i, step in enumerate(episode.steps):
        if step.action is None:
            labels.append("invalid")
            after_error = True
        elif _step_erred(step):
            labels.append("erred")
            after_error = True
        elif i == last and isinstance(step.action, (Finish, AskUser, Refuse)):
            labels.append("final")
            after_error = False
        elif after_error:
            labels.append("recovery")
            after_error = False
        else:
            labels.append("ok")
    return labels


def is_eligible(episode: Episode, complete: bool = True) -> bool:
    """Whether the episode may contribute supervised turns (complete, verdict, success)."""
    return complete and episode.verdict is not None and episode.verdict.success


def normalize_message(message: dict[str, Any], weight: int | None) -> dict[str, Any]:
    """A message with exactly :data:`MESSAGE_KEYS` (absent ones None)."""
    out = {k: message.get(k) for k in MESSAGE_KEYS}
    out["weight"] = weight
    return out


def sft_record(episode: Episode, *, complete: bool = True) -> SftRecord:
    """Build the SFT record of ``episode`` (see the module docstring for the mask rules)."""
    eligible = is_eligible(episode, complete)
    labels = label_turns(episode)
    raw = episode_to_openai(episode)
    messages: list[dict[str, Any]] = []
    mask: list[int] = []
    turn = 0
    for message in raw:
        if message["role"] == "assistant":
            supervised = eligible and turn < len(labels) and labels[turn] in SUPERVISED
            turn += 1
            messages.append(normalize_message(message, int(supervised)))
            mask.append(int(supervised))
        else:
            messages.append(normalize_message(message, None))
            mask.append(0)
    return SftRecord(
        id=episode.header.episode_id,
        task_id=episode.header.task_id,
        messages=messages,
        tools=json.dumps(episode_tools(episode), sort_keys=True),
        train_mask=mask,
        turn_labels=list(labels),
        eligible=eligible,
        verified=episode.verdict is not None,
        model_sha256=episode.header.planner.model_sha256,
        eta_version=episode.header.eta_version,
    )
