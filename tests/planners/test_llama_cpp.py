"""The in-process llama.cpp planner on the real 0.5B model (slow; still runs in CI)."""

from __future__ import annotations

import asyncio
import math

import pytest

from pocketpilot.contracts import SamplerSettings
from pocketpilot.errors import ModelIntegrityError, PlannerOutputError
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.base import ChatMessage, PlannerOutput, PlanRequest
from pocketpilot.harness.context import ContextAssembler, ContextBudget
from pocketpilot.harness.planners import LlamaCppPlanner
from pocketpilot.models.store import CATALOGUE
from pocketpilot.tasks import load_suite, prepare

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def planner(test_gguf):
    p = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=160), n_ctx=4096)
    yield p
    asyncio.run(p.aclose())


class ToolsFirst:
    """Wraps a planner so the first ``n`` steps may only call tools: guarantees a multi-step run."""

    def __init__(self, inner, n: int) -> None:
        self.inner, self.n, self.calls = inner, n, 0

    @property
    def info(self):
        return self.inner.info

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    async def load(self):
        await self.inner.load()

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        self.calls += 1
        if self.calls <= self.n:
            request = request.model_copy(update={"kinds": ("tool_call",)})
        return await self.inner.plan(request)

    async def aclose(self):
        return None


def task(task_id):
    return next(t for t in load_suite() if t.id == task_id)


async def test_three_schema_valid_steps_with_policy_records(planner, test_gguf):
    spec = task("settings-meeting-mode")
    run = prepare(spec)
    session = Session(ToolsFirst(planner, 2), run.executor, config=HarnessConfig(max_steps=3),
                      confirm=AllowAll(), verifier=run.verifier)
    episode = await session.run(spec.goal)
    assert len(episode.steps) == 3
    exposed = {t.name for t in run.executor.tools()}
    for step in episode.steps:
        assert step.action is not None, step.planner.raw  # the grammar makes invalid output unreachable
        if step.action.kind == "tool_call":
            assert {c.name for c in step.action.calls} <= exposed
        turn = step.planner
        assert turn.completion_tokens == len(turn.token_ids) == len(turn.token_logprobs) > 0
        assert all(lp <= 1e-6 and math.isfinite(lp) for lp in turn.token_logprobs)
        assert 0 < turn.prompt_tokens_evaluated <= turn.prompt_tokens
    # KV prefix reuse: a later step evaluates only what was added since the previous one
    for prev, cur in zip(episode.steps, episode.steps[1:], strict=False):
        new = cur.planner.prompt_tokens - prev.planner.prompt_tokens
        assert cur.planner.prompt_tokens_evaluated <= new + 32
    info = episode.header.planner
    entry = CATALOGUE["qwen2.5-coder-0.5b-instruct-q4_k_m"]
    assert info.backend == "llama.cpp" and info.quant_type == "Q4_K_M"
    assert info.model_sha256 == entry.sha256
    assert episode.verdict is not None


async def _request(planner, text="Turn off wifi"):
    spec = task("settings-wifi-off")
    tools = prepare(spec).executor.tools()
    assembler = ContextAssembler(ContextBudget(), planner.count_tokens)
    kinds = ("tool_call", "ask_user", "refuse", "finish")
    prefix, _ = assembler.prefix(tools, kinds)
    messages = assembler.assemble(prefix, ChatMessage(role="user", content=text), [])
    return PlanRequest(messages=messages, tools=tools, kinds=kinds)


async def test_output_cut_by_max_tokens_is_a_typed_error(test_gguf):
    short = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=4), n_ctx=2048)
    try:
        with pytest.raises(PlannerOutputError, match="cut at max_tokens=4") as info:
            await short.plan(await _request(short))
        assert info.value.turn.completion_tokens == 4
    finally:
        await short.aclose()


async def test_cancel_mid_generation_stops_the_thread(planner):
    request = await _request(planner, "Write a very long note about everything you know, then finish.")
    task_ = asyncio.create_task(planner.plan(request))
    await asyncio.sleep(0.05)
    task_.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task_
    out = await planner.plan(await _request(planner))  # still usable afterwards
    assert out.action.kind in {"tool_call", "ask_user", "refuse", "finish"}


async def test_corrupt_gguf_is_rejected(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 64)
    planner = LlamaCppPlanner(bad)
    with pytest.raises(ModelIntegrityError, match="could not load"):
        await planner.load()
    with pytest.raises(ModelIntegrityError):
        LlamaCppPlanner(tmp_path / "missing.gguf")


async def test_grammar_of_the_whole_sandbox_toolset_parses(planner):
    """Every sandbox tool's schema (patterns, enums, bounds) must become a grammar llama.cpp accepts."""
    from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone

    tools = SandboxExecutor(SandboxPhone()).tools()
    kinds = ("tool_call", "ask_user", "refuse", "finish")
    # The grammar is built from `tools`; a short prompt keeps prompt processing out of the test.
    messages = [ChatMessage(role="system", content="Answer with one JSON action."),
                ChatMessage(role="user", content="Set an alarm for 06:30")]
    out = await planner.plan(PlanRequest(messages=messages, tools=tools, kinds=kinds))
    assert out.action.kind in kinds


async def test_a_grammar_llama_cpp_rejects_is_a_typed_error_not_a_crash(planner):
    from pocketpilot.contracts import ToolSpec
    from pocketpilot.errors import PlannerBackendError

    odd = ToolSpec(name="odd", parameters={"type": "object", "properties": {
        "word": {"type": "string", "pattern": "^a\\bc$"}}, "required": ["word"]})
    assembler = ContextAssembler(ContextBudget(), planner.count_tokens)
    prefix, _ = assembler.prefix([odd], ("tool_call",))
    messages = assembler.assemble(prefix, ChatMessage(role="user", content="go"), [])
    with pytest.raises(PlannerBackendError, match="rejected the action grammar"):
        await planner.plan(PlanRequest(messages=messages, tools=[odd], kinds=("tool_call",)))


@pytest.mark.parametrize("constraint", ["llguidance", "gbnf"])
async def test_batch_groups_keep_a_copied_mixed_batch_apart(test_gguf, constraint):
    """Told to copy a batch that reads and changes at once, the model cannot: the grammar lets a
    batch take its calls from one group, whichever the first call opened."""
    from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone

    tools = [t for t in SandboxExecutor(SandboxPhone()).tools() if t.name in ("get_settings", "set_wifi", "set_bluetooth")]
    groups = [[t.name for t in tools if t.read_only], [t.name for t in tools if not t.read_only]]
    mixed = ('{"kind":"tool_call","calls":[{"name":"get_settings","arguments":{}},'
             '{"name":"set_wifi","arguments":{"enabled":false}},{"name":"set_bluetooth","arguments":{"enabled":false}}]}')
    messages = [ChatMessage(role="system", content="Reply with the JSON the user gives, unchanged."),
                ChatMessage(role="user", content=mixed)]
    planner = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=96), n_ctx=2048, constraint=constraint)
    try:
        free = await planner.plan(PlanRequest(messages=messages, tools=tools, kinds=("tool_call",)))
        kept = await planner.plan(PlanRequest(messages=messages, tools=tools, kinds=("tool_call",), batch_groups=groups))
    finally:
        await planner.aclose()
    assert len({c.name for c in free.action.calls}) > 1  # the model does copy a batch when nothing stops it
    names = {c.name for c in kept.action.calls}
    assert any(names <= set(g) for g in groups), names


@pytest.mark.parametrize("constraint", ["llguidance", "gbnf"])
async def test_a_summary_past_its_bound_is_unreachable_under_llguidance(test_gguf, constraint):
    """Told to copy a finish whose summary is longer than the 400 characters an action allows,
    the model copies it: under GBNF (which cannot hold long bounds) validation refuses the output,
    under llguidance the grammar closes the string at the bound and the action is valid."""
    long = " ".join(["The report is filed and the team has been told about it."] * 9)
    assert len(long) > 400
    messages = [ChatMessage(role="system", content="Reply with the JSON the user gives, unchanged."),
                ChatMessage(role="user", content='{"kind":"finish","summary":"' + long + '"}')]
    planner = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(max_tokens=200), n_ctx=2048, constraint=constraint)
    try:
        if constraint == "gbnf":
            with pytest.raises(PlannerOutputError, match="at most 400 characters"):
                await planner.plan(PlanRequest(messages=messages, tools=[], kinds=("finish",)))
            return
        out = await planner.plan(PlanRequest(messages=messages, tools=[], kinds=("finish",)))
    finally:
        await planner.aclose()
    assert out.action.kind == "finish" and 300 < len(out.action.summary) <= 400
    assert long.startswith(out.action.summary[:300])  # it was copying, and stopped at the bound


async def test_forget_makes_the_next_request_pay_for_its_whole_prompt(test_gguf):
    """A repeated request reuses the KV cache; after ``forget`` it is evaluated as a cold one."""
    cold = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(temperature=0.0, max_tokens=160), n_ctx=2048,
                           prefix_cache=False)
    try:
        request = await _request(cold)
        first = (await cold.plan(request)).turn
        again = (await cold.plan(request)).turn
        await cold.forget()
        after = (await cold.plan(request)).turn
    finally:
        await cold.aclose()
    assert first.prompt_tokens == again.prompt_tokens == after.prompt_tokens > 100
    assert again.prompt_tokens_evaluated < first.prompt_tokens // 4  # the control: the cache was used
    assert after.prompt_tokens_evaluated >= first.prompt_tokens - 1
    assert after.raw == first.raw  # greedy output does not depend on what was cached
