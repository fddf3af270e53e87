"""What a recall may show: never a deleted memory, never another owner's, whatever η's switches.

The owner's history goes in whole when it fits the memory budget and by retrieval when it does
not; η's memory switches change how it is shown (``as_messages``: a message per memory), which
notes come with it and whether the planner may search afterwards. The attacker looks for the
words everywhere a run could show them: every prompt the planner got (its own searches'
results included), and the trace. A deleted memory was shown in an earlier run first, so the
run captured it; another owner's memories sit in the same store file and share the request's
words, so a retrieval that strayed would rank them first.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _adv_wish_support as support
import pytest
from _adv_wish_support import ADMIN, alice, remember, wish_stores

from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, HarnessConfig, MemoryPlacement
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.memory import BoundMemory, Caller, SqliteMemory

REQUEST = "Where is the spare key?"
KEPT = "I keep the spare umbrella in the hall closet."
SECRET = "Bartholomew Quince keeps the spare key under the blue heron statue."
BOBS = "Bob keeps the spare key under the doormat by the garage."
TOOLS = ["get_settings"]
SEARCH = {"kind": "memory_search", "query": "where is the spare key kept"}
FINISH = {"kind": "finish", "summary": "Looked for the spare key."}
switches = support.switches


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SqliteMemory, SqliteMemory]]:
    with wish_stores(tmp_path) as both:
        yield both


@pytest.fixture(params=["whole", "retrieved"])
def config(request: pytest.FixtureRequest) -> HarnessConfig:
    """The history in whole (it fits the budget) or retrieved (no budget)."""
    return HarnessConfig() if request.param == "whole" else HarnessConfig(memory=MemoryPlacement(budget=0))


def written(traces: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in traces.rglob("*") if p.is_file())


async def ask(private: SqliteMemory, switches: tuple[str, ...], config: HarnessConfig,
              traces: Path) -> tuple[Any, ScriptedPlanner, str]:
    """Alice asks; her planner searches memory (where offered or not) and finishes. The episode,
    the planner and everything it was shown, its trace included."""
    planner = ScriptedPlanner([SEARCH, FINISH], validate=False)
    episode = await support.run(planner, SandboxExecutor(SandboxPhone()), REQUEST, switches=switches,
                                memory=BoundMemory(private, alice(), "s1"), tools=TOOLS, confirm=AllowAll(),
                                config=config, trace_dir=traces)
    search = episode.steps[0]
    if "memory_search" in planner.requests[0].kinds:
        assert search.retrieved  # the search ran, and found what it may
    else:  # the whole history is shown and η closes the search: one made anyway runs nothing
        assert search.results[0].error.code == "not_allowed" and not search.retrieved
    shown = "\n".join(m.content for r in planner.requests for m in r.messages)
    return episode, planner, shown + "\n" + written(traces)


async def test_a_deleted_memory_is_never_shown(stores, switches, config, tmp_path):
    private, _ = stores
    remember(private, "user_statement", KEPT)
    remember(private, "user_statement", SECRET)
    episode, _, seen = await ask(private, switches, config, tmp_path / "before")  # shown once, and captured
    assert "heron" in seen
    admin = Caller.admin(ADMIN, acting_for="alice")
    gone = [i.id for i in private.list_items(admin, status="active", limit=100) if "heron" in i.content]
    assert gone and private.delete(admin, gone) >= 1
    episode, planner, seen = await ask(private, switches, config, tmp_path / "after")
    assert KEPT in [h.content for h in episode.header.recalled]  # the recall ran, and showed what is left
    for word in ("heron", "Bartholomew", "Quince"):
        assert word not in seen, word


async def test_another_owners_memories_are_never_shown(stores, switches, config, tmp_path):
    private, _ = stores
    remember(private, "user_statement", KEPT)
    for n in range(3):
        remember(private, "user_statement", f"{BOBS} (copy {n})", who="bob")
    episode, planner, seen = await ask(private, switches, config, tmp_path / "traces")
    assert [h.content for h in episode.header.recalled] == [KEPT]
    assert {m.provenance.get("owner") for s in episode.steps for m in s.retrieved} <= {"alice"}
    for word in ("doormat", "garage", "Bob"):
        assert word not in seen, word
