"""Several sessions on one model each keep their own KV: a step evaluates only what it adds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pocketpilot.contracts import SamplerSettings
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.planners import LlamaCppPlanner
from pocketpilot.harness.planners.kv_snapshots import KvSnapshots

REQUESTS = [
    "Turn on wifi, then turn on bluetooth, then set brightness to 30.",
    "Set brightness to 70, then turn off wifi, then turn on do not disturb.",
    "Turn off bluetooth, then turn on do not disturb, then turn on wifi.",
    "Turn on do not disturb, then set brightness to 10, then turn off bluetooth.",
]
TOOLS = ["set_wifi", "set_bluetooth", "set_brightness", "set_do_not_disturb"]


def _excess(episodes) -> list[int]:  # noqa: ANN001
    """Per planner step after a session's first: tokens evaluated beyond what the step added."""
    out = []
    for episode in episodes:
        turns = [s.planner for s in episode.steps if s.planner is not None and s.planner.prompt_tokens]
        for before, now in zip(turns, turns[1:], strict=False):
            new = now.prompt_tokens - before.prompt_tokens - before.completion_tokens
            out.append(now.prompt_tokens_evaluated - max(new, 0))
    return out


async def _interleaved(planner: LlamaCppPlanner, requests: list[str]):  # noqa: ANN202
    sessions = [Session(planner, SandboxExecutor(SandboxPhone()), tools=TOOLS, confirm=AllowAll(),
                        config=HarnessConfig(max_steps=2)) for _ in requests]
    return await asyncio.gather(*(s.run(r) for s, r in zip(sessions, requests, strict=True)))


@pytest.mark.slow
def test_four_interleaved_sessions_evaluate_only_their_new_tokens(test_gguf: Path, tmp_path: Path) -> None:
    from pocketpilot.harness.planners.prefix_cache import PrefixCache

    async def go(snapshots: KvSnapshots, requests: list[str]):  # noqa: ANN202
        planner = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(temperature=0.0, max_tokens=40), n_ctx=4096,
                                  prefix_cache=PrefixCache(tmp_path / "kv"))
        planner._snapshots = snapshots
        try:
            return await _interleaved(planner, requests)
        finally:
            await planner.aclose()

    excess = _excess(asyncio.run(go(KvSnapshots(), REQUESTS)))
    assert len(excess) >= 3, "the sessions took too few steps to interleave"
    assert max(excess) <= 32, excess
    # control: with no snapshots the same interleaving re-evaluates the other session's context
    control = _excess(asyncio.run(go(KvSnapshots(max_bytes=0, min_gain=10**9), REQUESTS[:2])))
    assert max(control) > 32, control


def test_snapshots_pick_the_longest_continuation_and_stay_bounded() -> None:
    snaps = KvSnapshots(max_bytes=250, min_gain=2)
    try:
        snaps.save([1, 2, 3, 4, 5, 6], b"a" * 100)
        snaps.save([1, 2, 9, 9, 9, 9, 9], b"b" * 100)
        found = snaps.best([1, 2, 3, 4, 5, 6, 7, 8], live=2)
        assert found is not None and found[1] == (1, 2, 3, 4, 5, 6)
        assert snaps.best([1, 2, 3, 4, 5, 6, 7], live=5) is None  # the live sequence is as good: no restore
        snaps.save([1, 2, 3, 4, 5, 6, 7, 8, 9], b"c" * 100)  # extends the first: replaces it
        assert len(snaps) == 2
        snaps.save([5, 5, 5, 5], b"d" * 100)  # past the bound: the least recently used goes
        assert len(snaps) == 2 and snaps.best([1, 2, 9, 9, 9, 9, 9, 1], live=0) is None
    finally:
        snaps.close()
    assert len(snaps) == 0


def _actions(episodes) -> list[list[str]]:  # noqa: ANN001
    return [[s.action.model_dump_json() if s.action is not None else f"unparsed: {s.planner and s.planner.raw}"
             for s in e.steps] for e in episodes]


@pytest.mark.slow
def test_sessions_in_contexts_of_their_own_act_as_they_do_alone(test_gguf: Path, tmp_path: Path) -> None:
    """Four interleaved sessions, a context each over one model: greedy actions are each one's
    alone, no step re-evaluates another's context, and no sequence goes through a snapshot."""
    from pocketpilot.harness.planners.prefix_cache import PrefixCache

    def planner(contexts: int) -> LlamaCppPlanner:
        return LlamaCppPlanner(test_gguf, sampler=SamplerSettings(temperature=0.0, max_tokens=40), n_ctx=4096,
                               prefix_cache=PrefixCache(tmp_path / "kv"), contexts=contexts)

    async def alone() -> list:  # noqa: ANN202 - one planner, one session after the other
        p = planner(1)
        try:
            return [(await _interleaved(p, [r]))[0] for r in REQUESTS]
        finally:
            await p.aclose()

    async def together() -> tuple[list, tuple[int, int, int, int]]:
        p = planner(4)
        try:
            episodes = await _interleaved(p, REQUESTS)
            pool = p._contexts
            assert pool is not None
            return episodes, (len(pool), pool.copies, pool.spills, pool.restores)
        finally:
            await p.aclose()

    expected = _actions(asyncio.run(alone()))
    episodes, (resident, copies, spills, restores) = asyncio.run(together())
    assert _actions(episodes) == expected
    excess = _excess(episodes)
    assert len(excess) >= 3 and max(excess) <= 32, excess
    # the runs alone filled the contexts first: each interleaved session may spill one earlier sequence once,
    # but nothing is restored mid-run (that would re-evaluate) and the resident count holds its cap
    assert resident <= 4 and spills <= 4 and restores == 0, (resident, copies, spills, restores)
