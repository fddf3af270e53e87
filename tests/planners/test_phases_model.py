"""Think, then act and choose, then fill on the real 0.5B (slow): structure only, never exact text."""

from __future__ import annotations

import asyncio

import jsonschema
import pytest

from pocketpilot.contracts import SamplerSettings, ToolCallAction
from pocketpilot.harness.base import PlanRequest
from pocketpilot.harness.planners import LlamaCppPlanner
from pocketpilot.harness.planners.llama_cpp import llguidance_available
from pocketpilot.harness.planners.phases import action_text

pytestmark = pytest.mark.slow

ENGINES = ["gbnf", pytest.param("llguidance", marks=pytest.mark.skipif(not llguidance_available(),
                                                                        reason="needs llguidance"))]


@pytest.fixture(scope="module")
def prompts(harness_prompts) -> list[PlanRequest]:
    return harness_prompts


@pytest.fixture(scope="module")
def planner(test_gguf):
    # reproducible: the evaluation order depends on the prompt alone, not on what a phased turn
    # left in the KV cache, so turns with the options off can be compared bit for bit
    p = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=160), n_ctx=4096, n_threads=1,
                        prefix_cache=False, reproducible=True)
    yield p
    asyncio.run(p.aclose())


def _set(planner: LlamaCppPlanner, engine: str, think: int = 0, choose: bool = False) -> None:
    planner.constraint, planner.think_tokens, planner.choose_then_fill = engine, think, choose
    planner.fast_forward = engine == "llguidance" and planner.batch_invariant


def _spells_its_text(planner: LlamaCppPlanner, turn) -> None:  # noqa: ANN001
    assert planner._llm.detokenize(turn.token_ids).decode("utf-8") == turn.raw
    assert len(turn.token_logprobs) == len(turn.token_ids) == turn.completion_tokens


@pytest.mark.parametrize("engine", ENGINES)
async def test_options_off_leave_greedy_output_as_it_was(planner, prompts, engine) -> None:
    _set(planner, engine)
    before = [(await planner.plan(r)).turn for r in prompts[:2]]
    _set(planner, engine, think=24, choose=True)
    for r in prompts[:2]:
        await planner.plan(r)
    _set(planner, engine)
    after = [(await planner.plan(r)).turn for r in prompts[:2]]
    for a, b in zip(before, after, strict=True):
        assert a.token_ids == b.token_ids and a.raw == b.raw
        assert b.thought is None and b.phases == [] and "\n" not in b.raw


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_thought_is_bounded_recorded_and_precedes_a_valid_action(planner, prompts, engine) -> None:
    _set(planner, engine, think=12)
    for request in prompts[:2]:
        out = await planner.plan(request)
        turn = out.turn
        assert [p.name for p in turn.phases] == ["thought", "action"]
        assert turn.phases[0].tokens <= 12 and turn.thought is not None
        assert turn.raw.startswith("Thought:") and turn.raw.count("\n") == 1
        assert out.action.model_dump_json(exclude_defaults=True)  # parsed from the last line
        _spells_its_text(planner, turn)
        assert planner.eval_settings.think_tokens == 12


@pytest.mark.parametrize("engine", ENGINES)
async def test_choose_then_fill_yields_arguments_valid_under_the_chosen_tools_schema(planner, prompts, engine) -> None:
    _set(planner, engine, choose=True)
    for request in prompts:
        out = await planner.plan(request)
        turn = out.turn
        names = [p.name for p in turn.phases]
        if isinstance(out.action, ToolCallAction):
            assert names == ["choice", "fill"]
            specs = {t.name: t for t in request.tools}
            for call in out.action.calls:
                jsonschema.validate(call.arguments, specs[call.name].parameters)
            assert '"tools":[' in turn.raw.split("\n")[0]
        else:
            assert names == ["choice"] and "\n" not in turn.raw
        assert action_text(turn.raw) == turn.raw.rsplit("\n", 1)[-1]
        _spells_its_text(planner, turn)


async def test_choose_then_fill_with_a_thought_and_a_whole_run(planner, prompts) -> None:
    _set(planner, "llguidance" if llguidance_available() else "gbnf", think=16, choose=True)
    out = await planner.plan(prompts[0])
    assert [p.name for p in out.turn.phases][:2] == ["thought", "choice"]
    _spells_its_text(planner, out.turn)
    _set(planner, planner.constraint)


async def test_flash_attention_and_a_quantized_kv_cache_decode_valid_actions(test_gguf, prompts) -> None:
    p = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=160), n_ctx=4096, n_threads=1,
                        prefix_cache=False, flash_attn=True, kv_type="q8_0")
    try:
        out = await p.plan(prompts[0])
        assert out.turn.finish_reason == "stop" and out.action.kind
        assert p.eval_settings.flash_attn and p.eval_settings.kv_type == "q8_0"
    finally:
        await p.aclose()
