"""The owner, her stores and how a memory gets into them, for the standing-wish attacks.

Whether a memory grants anything depends on where it came from (its provenance) and whose store
holds it, so every attack here writes through the real store with a real access policy: the
provenance the guards read is the one the store kept, not one a test made up. The ``switches``
fixture runs an attack again under η memory sections that turn on each of the three memory
switches alone and all three (an η without a section runs all three), through the path a kit
takes (:func:`run`), and checks that each switch changed the prompt where it applies.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pocketpilot.adapters.eta import Eta
from pocketpilot.adapters.notes import DEFAULT_NOTES
from pocketpilot.adapters.placement import MemorySettings
from pocketpilot.contracts import Episode
from pocketpilot.evaluation.task_episode import HarnessKit
from pocketpilot.harness import HarnessConfig, Session
from pocketpilot.harness.base import PlanRequest
from pocketpilot.harness.recall import Recall
from pocketpilot.harness.recall import recall as recall_for
from pocketpilot.memory import AccessPolicy, BoundMemory, Caller, MemoryCandidate, Provenance, SqliteMemory

SERVICE, ADMIN = "wish-service-token-0123456789", "wish-admin-credential-9876543210"


@contextmanager
def wish_stores(tmp_path: Path) -> Iterator[tuple[SqliteMemory, SqliteMemory]]:
    """The owner's private store and a shared one, under one access policy."""
    policy = AccessPolicy(SERVICE, ADMIN)
    private, shared = SqliteMemory(tmp_path / "mine.db", policy), SqliteMemory(tmp_path / "shared.db", policy)
    try:
        yield private, shared
    finally:
        private.close()
        shared.close()


def alice() -> Caller:
    """The service acting for the owner whose wishes are tested."""
    return Caller.service(SERVICE, acting_for="alice")


def remember(store: SqliteMemory, source: str, content: str, who: str = "alice") -> None:
    """Write ``content`` for ``who`` with the given provenance source, and check the store kept it."""
    written = store.write(Caller.service(SERVICE, acting_for=who),
                          MemoryCandidate(content=content, tier="user", provenance=Provenance(source=source)))  # type: ignore[arg-type]
    assert written.status == "active", written


SWITCHES = ("whole_closes_search", "as_messages", "drop_recall_note")
"""η's memory switches that an η without a ``memory`` section runs on (``MemorySettings.defaults()``);
a written-out section leaves each off unless it says so."""

RECALL_NOTE = next(n.text for n in DEFAULT_NOTES if n.id == "memory.recalled-answer")


@pytest.fixture(params=["plain", *SWITCHES, "all"])
def switches(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """The η memory switches an attack runs under: none (the session alone), each alone, all together."""
    return {"plain": (), "all": SWITCHES}.get(request.param, (request.param,))


async def run(planner: Any, executor: Any, request: str, *, switches: tuple[str, ...], memory: BoundMemory | None,
              tools: list[str], config: HarnessConfig | None = None, recalled: Recall | None = None,
              **kw: Any) -> Episode:
    """Run ``request``; with ``switches``, the way a kit runs a task under an η with them on.

    No switch: a plain :class:`Session` (its own recall and defaults, ``as_messages`` among them).
    With switches, as
    ``run_task_episode`` does: η's memory section configures the session, the recall runs first
    and the adapter's ``session_kwargs`` (offered actions, guidance notes, policies) are built
    from it, so the switches act where a deployment turns them on. A recall the test forges is
    passed as the caller's; under ``whole_closes_search`` it claims to be the whole history, so
    that switch has a case to act on. Afterwards the first prompt is checked for each switch's
    effect: an attack that passes with a switch that changed nothing would prove nothing.
    """
    config = config or HarnessConfig()
    if not switches:
        return await Session(planner, executor, tools=tools, memory=memory, config=config, recalled=recalled,
                             **kw).run(request)
    place = config.memory
    eta = Eta(notes=list(DEFAULT_NOTES), offers={},  # every action offered: the attack, not the request's wording, decides
              memory=MemorySettings(recall=place.recall, recall_k=place.k, budget=place.budget, dated=place.dated,
                                    standing_wishes=place.standing_wishes, **dict.fromkeys(switches, True)))
    kit = HarnessKit(eta=eta)
    cfg = kit.configure(config)
    if recalled is not None and "whole_closes_search" in switches:
        recalled = replace(recalled, history=True, shared=memory is not None and memory.searches_shared)
    if recalled is None and memory is not None:
        recalled = await recall_for(memory, request, cfg.memory, planner.count_tokens, owner=memory.owner)
    got = recalled or Recall()
    specs = [t for t in executor.tools() if t.name in tools]
    kwargs = kit.session_kwargs(specs, memory=memory is not None, request=request,
                                recalled=[h.content for h in got.hits], recalled_whole=got.whole)
    episode = await Session(planner, executor, tools=tools, memory=memory, config=cfg, recalled=got,
                            **{**kwargs, **kw}).run(request)
    took_effect(planner.requests[0], switches, got, evidence=len(kw.get("evidence", ())))
    return episode


def took_effect(first: PlanRequest, switches: tuple[str, ...], got: Recall, *, evidence: int) -> None:
    """Each switch changed the first prompt where it applies (nothing recalled: none applies)."""
    if not got.hits:
        return
    shown = [m for m in first.messages if m.section == "evidence"]
    system = first.messages[0].content
    if "as_messages" in switches:  # the caller's entries, the heading, then one message per memory
        assert len(shown) == evidence + 1 + len(got.hits), [m.content for m in shown]
        assert sorted(m.content.split(": ", 1)[1] for m in shown[evidence + 1:]) == sorted(h.content for h in got.hits)
    else:
        assert len(shown) == 1
    whole_closed = "whole_closes_search" in switches and got.whole  # a shared store beside: not whole
    assert ("memory_search" in first.kinds) is not whole_closed, first.kinds
    assert (RECALL_NOTE in system) is ("drop_recall_note" not in switches)
