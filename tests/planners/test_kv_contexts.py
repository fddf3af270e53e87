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


def test_a_fork_shares_the_weights_and_owns_its_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """fork_context over a stand-in Llama (llama.cpp's context classes replaced): the model and
    vocabulary are the base's, the context, batch and token buffers the fork's own, the base is
    never constructed again (Llama's __setstate__ would load the model a second time), and closing
    the fork leaves the base's context alone."""
    import contextlib
    from types import SimpleNamespace

    import numpy as np
    from llama_cpp import Llama
    from llama_cpp import _internals as internals

    from pocketpilot.harness.planners.kv_contexts import fork_context

    class Part:
        def __init__(self, **kwargs: object) -> None:
            self.kwargs, self.closed = kwargs, False

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr(internals, "LlamaContext", Part)
    monkeypatch.setattr(internals, "LlamaBatch", Part)
    monkeypatch.setattr(internals, "LlamaTokenDataArray", Part)

    def no_second_load(self: Llama, *args: object, **kwargs: object) -> None:
        raise AssertionError("the model was constructed again")

    monkeypatch.setattr(Llama, "__init__", no_second_load)
    base = object.__new__(Llama)
    model, base_ctx = object(), Part()
    base.__dict__.update(_model=model, _ctx=base_ctx, _batch=Part(), context_params=SimpleNamespace(n_ctx=16),
                         verbose=False,
                         n_batch=8, _n_vocab=10, _lora_adapter=None, input_ids=np.zeros(16, dtype=np.intc),
                         scores=np.zeros((8, 10), dtype=np.single), n_tokens=5, _pp_abort=object(),
                         _stack=contextlib.ExitStack(), metadata={"m": 1})
    fork = fork_context(base)
    assert fork._model is model and fork.metadata is base.metadata  # the weights and vocabulary: shared
    assert fork._ctx is not base_ctx and fork._ctx.kwargs["model"] is model
    assert fork._ctx.kwargs["params"] is base.context_params  # the same geometry: the same numerics
    assert fork.n_tokens == 0 and fork.input_ids is not base.input_ids and fork.input_ids.shape == (16,)
    assert "_pp_abort" not in fork.__dict__ and base.n_tokens == 5  # the abort callback is per context
    fork.close()
    assert fork._ctx.closed and fork._batch.closed and not base_ctx.closed
