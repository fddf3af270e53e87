"""A task's memories, two ways: seeded into a fresh store (harness) or as earlier conversation (bare).

The benchmark compares one planner with and without its harness on the same information.
With the harness, a task's :class:`~pocketpilot.tasks.spec.MemorySeed` items become real
memories in a per-task :class:`~pocketpilot.memory.SqliteMemory` (provenance, trust, owner,
access checks, hybrid retrieval). Without it, the very same items are replayed as raw messages
of an earlier conversation, oldest dropped first when they exceed the context budget, as a
plain chat model would have them.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from ..contracts import ChatMessage
from ..ids import IdSource
from ..memory import (
    AccessPolicy,
    BoundMemory,
    Caller,
    Embedder,
    MemoryCandidate,
    Provenance,
    SqliteMemory,
    VerifyRules,
)
from ..memory.clock import Clock
from ..memory.models import WriteResult
from .spec import MemorySeed, TaskSpec

__all__ = ["TASK_USER", "PriorConversation", "TaskMemory", "fit_prior", "open_task_memory", "prior_conversation",
           "render_seed"]

logger = logging.getLogger(__name__)

TASK_USER = "user"
"""The owner a task run acts for; seeds of any other owner must stay invisible to it."""

_SEED_RULES = VerifyRules(max_age=timedelta(days=365 * 100))
"""Seeds are dated on the sandbox clock (March 2025), not the wall clock: a task must not turn
"stale" because the machine's calendar moved on."""


@dataclass
class TaskMemory:
    """A task's seeded store, and the view of it, bound to the task's user, that the harness uses."""

    store: SqliteMemory
    bound: BoundMemory
    seeded: list[WriteResult] = field(default_factory=list)
    """One result per seed, in the task's order."""

    @property
    def session(self) -> BoundMemory:
        """Deprecated: the old name of :attr:`bound`."""
        return self.bound

    def close(self) -> None:
        """Close the store (a ``:memory:`` store is gone afterwards)."""
        self.store.close()


def _candidate(seed: MemorySeed, task_id: str, index: int) -> MemoryCandidate:
    return MemoryCandidate(
        content=seed.content,
        tier=seed.tier,
        category=seed.category,
        due_condition=seed.due_condition,
        provenance=Provenance(
            source=seed.source,
            session_id=f"seed:{task_id}",
            observed_at=seed.created_at,
            trust=seed.trust,
            evidence=f"task:{task_id}/memory[{index}]",
        ),
    )


def open_task_memory(
    task: TaskSpec, *, embedder: Embedder | None = None, path: str | Path = ":memory:", session_id: str | None = None,
    ids: IdSource | None = None, clock: Clock | None = None,
) -> TaskMemory:
    """Create a fresh store, write every seed as its owner, and bind a view acting for :data:`TASK_USER`.

    Seeds are written in order through the store's normal capture path (verification included),
    so a later seed with the same key supersedes an earlier one exactly as in deployment.

    Args:
        task: The task whose ``memory`` seeds the store.
        embedder: Vector backend; None gives keyword-only (BM25) retrieval.
        path: Store file; the default is a throwaway in-memory store.
        session_id: Recorded in recall tags (default: the task id).
        ids: Mints the memories' ids (default: random); see :func:`~pocketpilot.tasks.prepare`'s ``seed``.
        clock: The store's clock (default: the wall clock).
    """
    service, admin = secrets.token_hex(16), secrets.token_hex(16)
    store = SqliteMemory(path, AccessPolicy(service, admin), embedder=embedder, verify_rules=_SEED_RULES,
                         ids=ids, clock=clock)
    try:
        results: list[WriteResult] = []
        for index, seed in enumerate(task.memory):
            caller = Caller.service(service, acting_for=seed.owner)
            results.append(store.write(caller, _candidate(seed, task.id, index)))
    except BaseException:
        store.close()
        raise
    caller = Caller.service(service, acting_for=TASK_USER)
    bound = BoundMemory(store, caller, session_id or task.id)
    logger.debug("%s: seeded %d memories (%s)", task.id, len(results), [r.status for r in results])
    return TaskMemory(store=store, bound=bound, seeded=results)


def render_seed(seed: MemorySeed) -> ChatMessage:
    """A seed as a message of earlier conversation: the user's own words, or the assistant's."""
    when = seed.created_at.strftime("%Y-%m-%d %H:%M")
    role = "user" if seed.source == "user_statement" else "assistant"
    return ChatMessage(role=role, content=f"({when}) {seed.content}", section="prior")


@dataclass(frozen=True)
class PriorConversation:
    """The earlier conversation a bare planner gets: the newest messages that fit, and what was left out."""

    messages: list[ChatMessage]
    """Oldest first; a note saying how many were left out comes first when any were."""
    total: int
    """The task user's memories, all of them."""
    budget: int
    """Tokens the messages were fitted to."""

    @property
    def dropped(self) -> int:
        """Messages left out, oldest first, because they did not fit."""
        return self.total - sum(1 for m in self.messages if m.section == "prior")


PRIOR_NOTE = "({n} older messages of our conversation are not shown: they did not fit.)"
"""Said first when the oldest messages were left out, as the context says of steps it leaves out."""


def fit_prior(task: TaskSpec, count_tokens: Callable[[str], int], budget: int, *, overhead: int = 0,
              note: bool = True) -> PriorConversation:
    """The task user's memories as earlier conversation, the newest that fit ``budget`` tokens, oldest first.

    Only :data:`TASK_USER`'s seeds appear (another person's memories were never in this user's
    conversation). When they do not all fit, the oldest messages are dropped first, whole, and
    (``note``) a first message says how many: the trace's preamble records it.

    Args:
        task: The task whose memories are replayed.
        count_tokens: The planner's token count.
        budget: Tokens the messages (and the note) may take.
        overhead: Tokens the chat template adds around each message.
        note: Say how many were left out.
    """
    seeds = sorted((s for s in task.memory if s.owner == TASK_USER), key=lambda s: s.created_at)
    messages = [render_seed(s) for s in seeds]
    room = budget
    said = note and sum(count_tokens(m.content) + overhead for m in messages) > budget
    if said:
        widest = count_tokens(PRIOR_NOTE.format(n=len(messages))) + overhead
        said = widest <= budget  # a window with no room for the note gets none
        room -= widest if said else 0
    kept: list[ChatMessage] = []
    used = 0
    for message in reversed(messages):
        cost = count_tokens(message.content) + overhead
        if used + cost > room:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    dropped = len(messages) - len(kept)
    if dropped:
        logger.debug("%s: %d oldest earlier messages dropped for budget", task.id, dropped)
        if said:
            kept.insert(0, ChatMessage(role="user", content=PRIOR_NOTE.format(n=dropped), section="prior_note"))
    return PriorConversation(messages=kept, total=len(messages), budget=budget)


def prior_conversation(task: TaskSpec, count_tokens: Callable[[str], int], budget: int) -> list[ChatMessage]:
    """The task user's memories as earlier conversation, oldest first, fitted to ``budget`` tokens.

    Only :data:`TASK_USER`'s seeds appear (another person's memories were never in this user's
    conversation). When they do not fit, the oldest messages are dropped first, whole (see
    :func:`fit_prior` for the form that says so).
    """
    return fit_prior(task, count_tokens, budget, note=False).messages
