from __future__ import annotations

import asyncio
import threading
import time

import pytest

from pocketpilot.contracts import (
    Episode,
    EpisodeHeader,
    Finish,
    PlannerInfo,
    RetrievedMemory,
    Step,
    ToolCall,
    ToolCallAction,
    ToolResult,
    Verdict,
)
from pocketpilot.harness.base import MemoryStore
from pocketpilot.memory import BoundMemory, MemoryCandidate, MemoryContentError, Provenance
from pocketpilot.memory.bound import run_off_loop


def test_implements_harness_protocol(kw_store, svc):
    assert isinstance(BoundMemory(kw_store, svc, "s1"), MemoryStore)


async def test_write_then_search_returns_evidence_with_provenance(store, svc):
    mem = BoundMemory(store, svc, "s1")
    wid = await mem.write("The user's car is parked on level 3", tier="episodic", category="fact",
                          provenance={"step": 2, "source": "user_statement"})
    hits = await mem.search("where did I park my car", k=3)
    assert hits and hits[0].id == wid and isinstance(hits[0], RetrievedMemory)
    prov = hits[0].provenance
    assert prov["session_id"] == "s1" and prov["step"] == 2 and prov["evidence_only"] is True
    assert prov["source"] == "user_statement" and "cosine" not in prov
    assert hits[0].score > 0


async def test_planner_inference_about_user_goes_to_review(kw_store, svc):
    mem = BoundMemory(kw_store, svc, "s1")
    wid = await mem.write("User is allergic to nuts", tier="user", category=None, provenance={})
    assert kw_store.get(svc, wid).tier == "review"
    assert await mem.search("allergic nuts") == []


async def test_bad_write_raises_typed_error(kw_store, svc):
    mem = BoundMemory(kw_store, svc, "s1")
    with pytest.raises(MemoryContentError):
        await mem.write("   ", tier="episodic", category=None, provenance={})


def _episode(retrieved_text: str) -> Episode:
    header = EpisodeHeader(episode_id="ep-1", request="Turn on airplane mode",
                           planner=PlannerInfo(backend="scripted", model="none"))
    steps = [
        Step(index=0, context_digest="d0",
             action=ToolCallAction(calls=[ToolCall(name="set_airplane_mode", arguments={"on": True})]),
             results=[ToolResult.success({"airplane_mode": True})],
             retrieved=[RetrievedMemory(id="x", tier="long_term", content=retrieved_text, score=1.0)]),
        Step(index=1, context_digest="d1", action=Finish(summary="done")),
    ]
    return Episode(header=header, steps=steps, stop_reason="finish", verdict=Verdict(success=True))


async def test_capture_episode_and_no_reingest_of_recalled(kw_store, svc):
    mem = BoundMemory(kw_store, svc, "s1")
    fact = kw_store.write(svc, MemoryCandidate(content="Airplane mode is in quick settings", tier="long_term",
                                               provenance=Provenance(source="user_statement"))).id
    hits = await mem.search("airplane mode quick settings")
    assert hits[0].id == fact
    ids = await mem.capture_episode(_episode("Airplane mode is in quick settings"))
    contents = [kw_store.get(svc, i).content for i in ids]
    assert len(ids) == 2
    assert contents[0].startswith("Task: Turn on airplane mode. Outcome: finish, verified success")
    assert "set_airplane_mode" in contents[1] and '"airplane_mode": true' in contents[1]
    assert all("quick settings" not in c for c in contents)
    # Re-capturing the same episode adds nothing new.
    assert await mem.capture_episode(_episode("Airplane mode is in quick settings")) == []
    # The recalled fact written back as if it were new evidence is recognised.
    again = await mem.write("Airplane mode is in quick settings", tier="episodic", category=None,
                            provenance={"source": "episode"})
    assert again == fact


async def test_cancellation_waits_for_the_worker_thread():
    started, finished = threading.Event(), threading.Event()

    def slow() -> int:
        started.set()
        time.sleep(0.3)
        finished.set()
        return 1

    task = asyncio.create_task(run_off_loop(slow))
    while not started.is_set():
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()  # not orphaned: the thread completed before CancelledError surfaced


class _SlowDisk:
    """The real store behind a slow disk: every write holds its thread for ``delay`` seconds."""

    def __init__(self, store, delay: float) -> None:
        self._store, self.delay = store, delay

    def __getattr__(self, name: str):
        return getattr(self._store, name)

    def write(self, caller, candidate):
        time.sleep(self.delay)
        return self._store.write(caller, candidate)


async def _longest_stall(work):
    """Run ``work`` beside a 5 ms ticker; return the longest gap between ticks, and work's result."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)  # the ticker is waiting on its first sleep before the work starts
    try:
        result = await work
    finally:
        done.set()
        await task
    return max(gaps), result


async def test_event_loop_not_blocked(kw_store, svc):
    delay = 0.5
    slow = _SlowDisk(kw_store, delay)
    mem = BoundMemory(slow, svc, "s1")
    stall, wid = await _longest_stall(
        mem.write("concurrent note", tier="episodic", category=None, provenance={"source": "episode"}))
    assert kw_store.get(svc, wid).content == "concurrent note"  # the slow write did happen
    assert stall < delay / 2  # the loop kept ticking while the write waited on the disk

    async def on_the_loop():
        return slow.write(svc, MemoryCandidate(content="blocking note", provenance=Provenance(source="episode")))

    # control: the same write run on the loop stalls the ticker for the whole write
    blocked, _ = await _longest_stall(on_the_loop())
    assert blocked >= delay * 0.9


async def test_shared_store_is_searched_alongside(tmp_path, policy, kw_store, svc):
    from pocketpilot.memory import SqliteMemory

    shared = SqliteMemory(tmp_path / "shared.db", policy, shared=True)
    shared.write(svc, MemoryCandidate(content="Bluetooth pairing needs the phone unlocked",
                                      provenance=Provenance(source="episode")))
    mem = BoundMemory(kw_store, svc, "s1", shared=shared)
    hits = await mem.search("bluetooth pairing")
    assert hits and hits[0].provenance["store"] == "shared"
    shared.close()
