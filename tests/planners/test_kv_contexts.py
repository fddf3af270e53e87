"""Which context a step lands in when several conversations share one model (no model needed)."""

from __future__ import annotations

import pytest

from pocketpilot.harness.planners.kv_contexts import KvContexts
from pocketpilot.harness.planners.kv_snapshots import KvSnapshots


class _Ctx:
    """A context that holds a token sequence; its state is that sequence."""

    made = 0

    def __init__(self) -> None:
        _Ctx.made += 1
        self.name = _Ctx.made
        self.seq: list[int] = []
        self.closed = False


def _pool(cap: int, snapshots: KvSnapshots) -> tuple[KvContexts, _Ctx]:
    base = _Ctx()

    def load(ctx: _Ctx, payload: bytes | bytearray | memoryview, tokens: list[int]) -> bool:
        assert list(bytes(payload)) == tokens  # the state handed over is the sequence's own
        ctx.seq = list(tokens)
        return True

    def close(ctx: _Ctx) -> None:
        ctx.closed = True

    return KvContexts(base, cap, snapshots, tokens=lambda c: c.seq, dump=lambda c: bytes(c.seq), load=load,
                      fork=_Ctx, close=close), base


def _step(pool: KvContexts, tokens: list[int]) -> _Ctx:
    """Acquire a context and evaluate the prompt in it (what the planner does)."""
    ctx = pool.acquire(tokens)
    ctx.seq = list(tokens)
    return ctx


PREFIX = list(range(10))


def _conversation(tag: int, steps: int) -> list[list[int]]:
    """Prompts of one conversation: the shared prefix, then its own growing history."""
    return [PREFIX + [100 + tag] * (5 * (k + 1)) for k in range(steps)]


def test_interleaved_conversations_each_keep_a_context_of_their_own() -> None:
    snaps = KvSnapshots(min_gain=2)
    pool, base = _pool(4, snaps)
    try:
        convs = [_conversation(tag, 4) for tag in range(4)]
        homes: dict[int, set[int]] = {tag: set() for tag in range(4)}
        for k in range(4):
            for tag in range(4):
                homes[tag].add(_step(pool, convs[tag][k]).name)
        assert all(len(h) == 1 for h in homes.values()), homes  # each stayed where it started
        assert len({next(iter(h)) for h in homes.values()}) == 4 and len(pool) == 4
        # three conversations forked off the first one's context once each; nothing went to disk
        assert (pool.copies, pool.spills, pool.restores, len(snaps)) == (3, 0, 0, 0)
    finally:
        pool.close()
        snaps.close()
    assert not base.closed and _Ctx.made >= 4


def test_past_the_cap_the_least_recently_used_goes_to_a_snapshot_and_comes_back() -> None:
    snaps = KvSnapshots(min_gain=2)
    pool, _ = _pool(2, snaps)
    try:
        a, b, c = (_conversation(tag, 3) for tag in range(3))
        _step(pool, a[0])
        _step(pool, b[0])
        _step(pool, c[0])  # a is least recently used: spilled, its context reused
        assert (len(pool), pool.spills, len(snaps)) == (2, 1, 1)
        ctx = pool.acquire(a[1])  # a's saved sequence is restored, not evaluated again
        assert pool.restores == 1 and ctx.seq == a[0]
        ctx.seq = a[1]
        assert len(pool) == 2  # still capped
    finally:
        pool.close()
        snaps.close()


def test_one_context_is_the_snapshot_scheme() -> None:
    snaps = KvSnapshots(min_gain=2)
    pool, base = _pool(1, snaps)
    try:
        a, b = _conversation(0, 2), _conversation(1, 2)
        assert _step(pool, a[0]) is base
        assert _step(pool, b[0]) is base and pool.spills == 1  # a's sequence saved before b overwrote it
        ctx = pool.acquire(a[1])
        assert ctx is base and ctx.seq == a[0] and pool.restores == 1
    finally:
        pool.close()
        snaps.close()


def test_a_conversation_that_continues_its_sequence_costs_nothing() -> None:
    snaps = KvSnapshots(min_gain=2)
    pool, base = _pool(4, snaps)
    try:
        for prompt in _conversation(0, 5):
            assert _step(pool, prompt) is base
        assert (len(pool), pool.copies, pool.spills, pool.restores) == (1, 0, 0, 0)
    finally:
        pool.close()
        snaps.close()


def test_a_context_that_cannot_be_made_falls_back_to_snapshots() -> None:
    snaps = KvSnapshots(min_gain=2)
    pool, base = _pool(4, snaps)

    def out_of_memory() -> _Ctx:
        raise ValueError("Failed to create llama_context")

    pool._fork = out_of_memory
    try:
        a, b = _conversation(0, 2), _conversation(1, 2)
        _step(pool, a[0])
        assert _step(pool, b[0]) is base and pool.spills == 1 and pool.cap == 1  # as with one context
        ctx = pool.acquire(a[1])
        assert ctx is base and ctx.seq == a[0] and pool.restores == 1
    finally:
        pool.close()
        snaps.close()


def test_cap_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        KvContexts(_Ctx(), 0, KvSnapshots(), tokens=lambda c: c.seq, dump=bytes, load=lambda *a: True,
                   fork=_Ctx, close=lambda c: None)
