"""Fast-forward, reproducible evaluation and a long context on the real 0.5B (slow; still runs in CI)."""

from __future__ import annotations

import asyncio
import concurrent.futures

import numpy as np
import pytest

from pocketpilot.contracts import SamplerSettings
from pocketpilot.executor.sandbox import EVERYDAY_APPS, SandboxExecutor, SandboxPhone
from pocketpilot.harness import HarnessConfig, Session
from pocketpilot.harness.action_schema import parse_action
from pocketpilot.harness.base import PlanRequest
from pocketpilot.harness.context import ContextBudget
from pocketpilot.harness.planners import LlamaCppPlanner, numerics
from pocketpilot.harness.planners.llama_cpp import llguidance_available

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not llguidance_available(), reason="needs llguidance (the [fast] extra)")]

@pytest.fixture(scope="module")
def planner(test_gguf):
    p = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=96), n_ctx=4096, n_threads=1,
                        constraint="llguidance", prefix_cache=False)
    yield p
    asyncio.run(p.aclose())


async def _turn(planner: LlamaCppPlanner, request: PlanRequest, constraint: str, fast: bool):
    planner.constraint, planner.fast_forward = constraint, fast
    out = await planner.plan(request)
    return out.turn


async def test_fast_forward_keeps_greedy_output_and_saves_passes(planner, bare_prompts):
    prompts = bare_prompts[:2]  # a first and a later step: CI's time budget
    saved = forced = 0
    for request in prompts:
        gbnf = await _turn(planner, request, "gbnf", False)
        bare = await _turn(planner, request, "llguidance", False)
        fast = await _turn(planner, request, "llguidance", True)
        for turn in (gbnf, bare, fast):
            parse_action(turn.raw, request.tools, request.kinds)  # a valid action every time
        # one token per pass under llguidance without fast-forward, as under GBNF: identical
        assert bare.token_ids == gbnf.token_ids
        assert bare.forced_tokens == 0 and bare.decode_passes == len(bare.token_ids)
        # fast-forward: forced tokens in batches, every one checked against greedy's own pick,
        # so each pass still yields greedy's token and the batch saves a pass per forced token
        assert fast.raw == bare.raw
        if planner.eval_settings.batch_invariant:  # the Makefile's build: nothing may differ
            assert fast.token_ids == bare.token_ids
        if fast.token_ids == bare.token_ids:
            assert fast.decode_passes == bare.decode_passes - fast.forced_tokens
        assert fast.decode_passes <= bare.decode_passes
        saved += bare.decode_passes - fast.decode_passes
        forced += fast.forced_tokens
    assert forced > 0 and saved > 0


def _rows(llm, tokens: list[int], start: int, width: int) -> list[np.ndarray]:
    """Logits at every position of ``tokens[start:]``, evaluated ``width`` tokens a pass."""
    import llama_cpp

    llm._ctx.kv_cache_seq_rm(-1, start, -1)
    rows = []
    for i in range(start, len(tokens), width):
        chunk = tokens[i : i + width]
        llm._batch.set_batch(batch=chunk, n_past=i, logits_all=True)
        llm._ctx.decode(llm._batch)
        for j in range(len(chunk)):
            ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, j)
            rows.append(np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy())
    return rows


async def test_small_batches_compute_bit_for_bit_what_one_token_passes_compute(test_gguf):
    """What fast-forward's default rests on, checked against the installed llama.cpp build:
    an upgrade whose kernels break it fails here, not in a user's trace."""
    planner = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=8), n_ctx=1024, n_threads=2,
                              prefix_cache=False)
    settings = planner.eval_settings
    assert settings.batch_invariant and not settings.repack, numerics.system_info()
    assert planner.fast_forward == (planner.constraint == "llguidance")  # on by default where it is exact
    await planner.load()
    try:
        llm = planner._llm
        prompt = llm.tokenize(b"<|im_start|>user\nTurn on wifi.<|im_end|>\n<|im_start|>assistant\n", special=True)
        action = llm.tokenize(b'{"kind":"tool_call","calls":[{"name":"set_wifi","arguments":{"enabled":true}}]}',
                              add_bos=False, special=False)
        tokens = prompt + action
        _rows(llm, tokens, 0, len(prompt))
        one = _rows(llm, tokens, len(prompt), 1)
        for width in (2, numerics.INVARIANT_BATCH):
            batched = _rows(llm, tokens, len(prompt), width)
            assert all(np.array_equal(a, b) for a, b in zip(one, batched, strict=True)), width
    finally:
        await planner.aclose()


async def test_reproducible_mode_evaluates_in_the_same_order_whatever_was_cached(test_gguf, bare_prompts):
    prompts = bare_prompts
    target, other = prompts[1], prompts[2]  # a later step, and another task's context
    turns = []
    for warmup in (None, other):
        p = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=96), n_ctx=4096, n_threads=1,
                            constraint="llguidance", reproducible=True, prefix_cache=False)
        try:
            if warmup is not None:
                await p.plan(warmup)  # leaves another conversation's KV cache behind
                await p.plan(prompts[0])  # and a cache that shares this task's prefix and more
            turns.append((await p.plan(target)).turn)
            info = p.info.eval
        finally:
            await p.aclose()
    cold, warm = turns
    assert warm.kv_reused <= warm.prefix_tokens  # only the stable prefix came from the cache
    assert cold.eval_splits[-1] == warm.eval_splits[-1] == cold.prompt_tokens - 1  # last token alone
    assert [s for s in cold.eval_splits if s >= cold.prefix_tokens] == \
           [s for s in warm.eval_splits if s >= warm.prefix_tokens]
    assert warm.token_ids == cold.token_ids
    assert info is not None and info.reproducible and info.n_threads == 1 and info.n_batch == 512


async def test_a_6k_token_policy_fits_at_n_ctx_16384(test_gguf):
    planner = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=96), n_ctx=16384, prefix_cache=False)
    await planner.load()
    rules = [f"{i}. When the user asks about setting {i % 7}, read the current settings first, change only "
             f"what was asked, and confirm the result from the tool output before you finish." for i in range(1, 400)]
    policy = "Operating policy:"
    for rule in rules:
        if planner.count_tokens(policy) >= 6000:
            break
        policy += "\n" + rule
    n_policy = planner.count_tokens(policy)
    assert 6000 <= n_policy <= 6600
    session = Session(planner, SandboxExecutor(SandboxPhone(), list(EVERYDAY_APPS)),
                      config=HarnessConfig(max_steps=1, budget=ContextBudget(guidance=n_policy + 100)),
                      guidance=[policy])
    try:
        episode = await session.run("Turn on wifi.")
    finally:
        await planner.aclose()
    step = episode.steps[0]
    assert step.planner is not None and step.planner.prompt_tokens > 6000
    assert step.action is not None, step.error  # a valid action, not a budget or context error
    assert planner.info.eval.n_ctx == 16384


async def test_the_vocabulary_is_built_while_the_first_prompt_evaluates_and_close_waits_for_it(test_gguf, bare_prompts):
    """llguidance's tokenizer is built by the first generation, beside its prompt evaluation
    (the build holds the GIL, so started by the load it stalled the caller's own work); closing
    the model while that thread still reads its vocabulary would free memory under it."""
    p = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=48), n_ctx=2048, constraint="llguidance",
                        prefix_cache=False)
    await p.load()
    assert p._llg_building is None and p._llg_tokenizer is None  # the load leaves the caller's thread free
    building = p._llg_building = p._build_tokenizer()  # a build in flight, as a first step starts one
    await p.aclose()  # right away: must wait for the read, not crash under it
    assert building.done() and building.exception() is None and p._llm is None

    q = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=48), n_ctx=2048, constraint="llguidance",
                        prefix_cache=False)
    started: list[concurrent.futures.Future] = []
    build = q._build_tokenizer

    def recorded() -> concurrent.futures.Future:
        started.append(build())
        return started[-1]

    q._build_tokenizer = recorded  # type: ignore[method-assign]
    try:
        request = bare_prompts[0]
        turn = (await q.plan(request)).turn
        parse_action(turn.raw, request.tools, request.kinds)
        assert len(started) == 1 and q._llg_tokenizer is started[0].result() and q._llg_building is None
        await q.plan(request)
        assert len(started) == 1  # built once
    finally:
        await q.aclose()
