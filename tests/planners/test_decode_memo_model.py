"""The decode memo over the real small model (slow): a hit returns what a fresh decode of the same step returns.

Structure only: the action and tokens are compared between two decodes of one model, never with
a text written here.
"""

from __future__ import annotations

import asyncio

import pytest

from pocketpilot.contracts import SamplerSettings
from pocketpilot.harness.planners import LlamaCppPlanner
from pocketpilot.harness.planners.decode_memo import DecodeMemo, MemoPlanner

pytestmark = [pytest.mark.slow, pytest.mark.model]


@pytest.mark.parametrize("reproducible", [True, False], ids=["reproducible", "kv-reuse"])
def test_a_memo_hit_returns_what_a_fresh_decode_returns(test_gguf, harness_prompts, tmp_path, reproducible) -> None:
    first, other = harness_prompts[0], harness_prompts[2]  # a first step of each of two tasks

    async def go() -> None:
        planner = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=160), n_ctx=4096, n_threads=1,
                                  prefix_cache=False, reproducible=reproducible)
        try:
            memo = DecodeMemo(tmp_path / "memo.jsonl")
            stored = await MemoPlanner(planner, memo).plan(first)  # a miss: decoded and stored
            assert memo.stats.misses == 1 and not stored.turn.memo
            await planner.plan(other)  # the KV cache now holds another task's prompt
            fresh = await planner.plan(first)  # decoded again, without the memo
            hit = await MemoPlanner(planner, DecodeMemo(tmp_path / "memo.jsonl")).plan(first)
            assert hit.turn.memo and hit.turn.decode_s == 0
            assert hit.action == fresh.action
            assert hit.turn.raw == fresh.turn.raw and hit.turn.token_ids == fresh.turn.token_ids
            assert hit.turn.token_logprobs == pytest.approx(fresh.turn.token_logprobs, abs=1e-4)
        finally:
            await planner.aclose()

    asyncio.run(go())
