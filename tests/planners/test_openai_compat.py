"""OpenAICompatPlanner: a strict protocol fake on loopback (fast) and fault cases.

The proof against llama-cpp-python's own server is in test_openai_real_server.py (slow).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from _openai_fake import FakeOpenAI
from scripted_actions import entry

from pocketpilot.contracts import Episode, RetrievedMemory, SamplerSettings, ToolSpec
from pocketpilot.errors import PlannerBackendError, PlannerOutputError, UsageError
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.base import ChatMessage, PlanRequest
from pocketpilot.harness.planners import OpenAICompatPlanner
from pocketpilot.harness.planners.openai_compat import OUTPUT_MODES
from pocketpilot.tasks import load_suite, prepare

TASK = "conditional-low-battery"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NoMemory:
    """A MemoryStore with nothing in it, so memory actions are offered and routed."""

    async def search(self, query: str, *, tier: str | None = None, k: int = 5) -> list[RetrievedMemory]:
        return []

    async def write(self, content: str, *, tier: str, category: str | None, provenance: dict[str, Any]) -> str:
        return "mem-1"

    async def capture_episode(self, episode: Episode) -> list[str]:
        return []


def tool_call(*calls: dict[str, Any]) -> str:
    return json.dumps({"kind": "tool_call", "calls": list(calls)})


FINISH = '{"kind":"finish","summary":"done"}'


async def run_session(fake: FakeOpenAI, planner: OpenAICompatPlanner, trace_dir: Path | None = None,
                      max_steps: int = 8) -> Episode:
    spec = next(t for t in load_suite() if t.id == TASK)
    task_run = prepare(spec)
    try:
        return await Session(planner, task_run.executor, memory=NoMemory(), config=HarnessConfig(max_steps=max_steps),
                             confirm=AllowAll(), trace_dir=trace_dir).run(spec.goal)
    finally:
        await planner.aclose()


async def test_history_is_a_valid_tool_conversation():
    script = [
        tool_call(entry("get_settings"), entry("get_device_info")),  # a batch of two
        "this is not an action",  # an output that does not parse
        '{"kind":"memory_search","query":"battery"}',  # a non-tool action
        tool_call(entry("set_brightness", level=10)),
        FINISH,
    ]
    with FakeOpenAI(script).running() as fake:
        episode = await run_session(fake, OpenAICompatPlanner(fake.url))
    assert fake.problems == []
    assert episode.stop_reason == "finish" and len(episode.steps) == 5
    assert len(fake.requests) == 5
    last = fake.requests[-1]["messages"]
    history = last[next(i for i, m in enumerate(last) if m["role"] == "assistant"):]
    shape = [(m["role"], [c["id"] for c in m.get("tool_calls", [])] or m.get("tool_call_id")) for m in history]
    assert shape == [
        ("assistant", ["call_0_0", "call_0_1"]), ("tool", "call_0_0"), ("tool", "call_0_1"),
        ("assistant", None), ("user", None),
        ("assistant", ["call_2_0"]), ("tool", "call_2_0"),
        ("assistant", ["call_3_0"]), ("tool", "call_3_0"),
    ]
    names = [c["function"]["name"] for m in history for c in m.get("tool_calls", [])]
    assert names == ["get_settings", "get_device_info", "pp_memory_search", "set_brightness"]
    # each call of the batch gets its own result: the two bodies are the two steps' results
    batch = episode.steps[0].results
    assert [json.loads(m["content"])["data"] for m in history[1:3]] == [r.data for r in batch]
    assert history[3]["content"] == "this is not an action" and "invalid_action" in history[4]["content"]
    assert json.loads(history[8]["content"])["ok"] is True
    # step k's messages are the same at step k+1 (stable ids: a server's prompt cache keeps hitting)
    for earlier, later in zip(fake.requests, fake.requests[1:], strict=False):
        assert later["messages"][: len(earlier["messages"])] == earlier["messages"]


async def test_served_model_id_goes_into_requests_and_the_trace_header(tmp_path):
    with FakeOpenAI([FINISH], models=("served-0.5b",)).running() as fake:
        episode = await run_session(fake, OpenAICompatPlanner(fake.url), trace_dir=tmp_path)
    assert {r["model"] for r in fake.requests} == {"served-0.5b"}
    header = json.loads(next(tmp_path.glob("*.jsonl")).read_text().splitlines()[0])["header"]
    assert header["planner"]["model"] == "served-0.5b" == episode.header.planner.model
    assert header["planner"]["output_mode"] == "json_object_schema"


@pytest.mark.parametrize(
    ("models", "asked", "match"),
    [
        (("a", "b"), None, "serves 2 models"),
        (("a",), "qwen2.5-coder-1.5b", "not 'qwen2.5-coder-1.5b'"),
        ((), None, "lists no model"),
    ],
)
async def test_model_choice_errors_are_typed(models, asked, match):
    with FakeOpenAI(models=models).running() as fake:
        planner = OpenAICompatPlanner(fake.url, asked)
        with pytest.raises(PlannerBackendError, match=match):
            await planner.load()
        await planner.aclose()


async def test_an_asked_model_the_server_lists_is_kept():
    with FakeOpenAI([FINISH], models=("a", "b")).running() as fake:
        planner = OpenAICompatPlanner(fake.url, "b")
        await planner.load()
        await planner.aclose()
    assert planner.info.model == "b"


@pytest.mark.parametrize(
    ("honours", "rejects", "expected", "probed"),
    [
        (("json_schema", "json_object_schema"), (), "json_schema", ["json_schema"]),
        (("json_object_schema", "tool_choice"), ("json_schema",), "json_object_schema",
         ["json_schema", "json_object_schema"]),
        # json_schema accepted but ignored, json_object_schema refused: the probe sees through both
        (("tool_choice",), ("json_object_schema",), "tool_choice", ["json_schema", "json_object_schema", "tool_choice"]),
        (("json_object",), (), "json_object", ["json_schema", "json_object_schema", "tool_choice", "json_object"]),
        ((), ("json_schema", "json_object_schema", "tool_choice", "json_object"), "prompt",
         ["json_schema", "json_object_schema", "tool_choice", "json_object"]),
    ],
)
async def test_output_mode_is_detected_in_order(honours, rejects, expected, probed):
    script = [tool_call(entry("get_settings")), FINISH]
    with FakeOpenAI(script, honours=honours, rejects=rejects).running() as fake:
        planner = OpenAICompatPlanner(fake.url)
        episode = await run_session(fake, planner)
    assert fake.probes == probed
    assert planner.info.output_mode == expected == episode.header.planner.output_mode
    assert fake.problems == []
    assert episode.stop_reason == "finish" and len(episode.steps) == 2
    first = fake.requests[0]
    if expected == "json_schema":
        assert first["response_format"]["json_schema"]["schema"]["oneOf"]
    elif expected == "json_object_schema":
        assert first["response_format"]["schema"]["oneOf"]
    elif expected == "tool_choice":
        assert first["tool_choice"]["function"]["name"] == first["tools"][0]["function"]["name"]
        assert first["tools"][0]["function"]["parameters"]["oneOf"]
    elif expected == "json_object":
        assert first["response_format"] == {"type": "json_object"}
    else:
        assert "response_format" not in first and "tools" not in first


@pytest.mark.parametrize("mode", OUTPUT_MODES)
async def test_a_chosen_output_mode_is_used_without_probing(mode):
    script = [tool_call(entry("get_settings")), FINISH]
    with FakeOpenAI(script, honours=OUTPUT_MODES, rejects=()).running() as fake:
        planner = OpenAICompatPlanner(fake.url, output_mode=mode)
        episode = await run_session(fake, planner)
    assert fake.probes == []
    assert episode.header.planner.output_mode == mode
    assert episode.stop_reason == "finish" and episode.steps[0].action.kind == "tool_call"


async def test_api_key_is_sent_as_bearer_and_never_recorded(tmp_path):
    key = "sk-test-" + "9f" * 12
    with FakeOpenAI([tool_call(entry("get_settings")), FINISH], api_key=key).running() as fake:
        episode = await run_session(fake, OpenAICompatPlanner(fake.url, api_key=key), trace_dir=tmp_path)
    assert episode.stop_reason == "finish"
    assert {h["Authorization"] for h in fake.headers} == {f"Bearer {key}"}
    assert key not in next(tmp_path.glob("*.jsonl")).read_text()
    assert key not in episode.model_dump_json()


async def test_a_wrong_api_key_is_a_clear_error_without_the_key():
    with FakeOpenAI(api_key="sk-right").running() as fake:
        planner = OpenAICompatPlanner(fake.url, api_key="sk-wrong-123")
        with pytest.raises(PlannerBackendError, match="HTTP 401.*credentials") as err:
            await planner.load()
        await planner.aclose()
    assert "sk-wrong-123" not in str(err.value)


async def test_http_error_mid_run_stops_with_planner_error():
    with FakeOpenAI([tool_call(entry("get_settings")), FINISH], fail_at=2).running() as fake:
        episode = await run_session(fake, OpenAICompatPlanner(fake.url))
    assert episode.stop_reason == "planner_error"
    assert "HTTP 500" in episode.stop_detail and "upstream exploded" in episode.stop_detail
    assert len(episode.steps) == 1


async def test_timeout_is_typed():
    with FakeOpenAI(delay_s=1.5).running() as fake:
        planner = OpenAICompatPlanner(fake.url, output_mode="json_object_schema", timeout_s=0.3)
        with pytest.raises(PlannerBackendError, match="no reply within 0.3s"):
            await planner.plan(request())
        await planner.aclose()


async def test_unreachable_server():
    planner = OpenAICompatPlanner(f"http://127.0.0.1:{free_port()}/v1", "m", timeout_s=2)
    with pytest.raises(PlannerBackendError, match="cannot connect.*is the server running"):
        await planner.plan(request())
    await planner.aclose()


@pytest.mark.parametrize("kwargs", [{"base_url": "127.0.0.1:8080/v1"}, {"output_mode": "grammar"}])
def test_bad_configuration_is_a_usage_error(kwargs):
    with pytest.raises(UsageError):
        OpenAICompatPlanner(**{"base_url": "http://x/v1", **kwargs})


# ---------------------------------------------------------------- replies, over a mock transport


def request() -> PlanRequest:
    tools = [ToolSpec(name="ping", parameters={"type": "object", "properties": {}})]
    return PlanRequest(messages=[ChatMessage(role="user", content="hi")], tools=tools, kinds=("tool_call", "finish"))


def mock(handler, mode: str = "json_schema") -> OpenAICompatPlanner:
    def route(req: httpx.Request) -> httpx.Response:
        if req.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "m"}]})
        return handler(req)

    return OpenAICompatPlanner("http://test/v1", output_mode=mode, transport=httpx.MockTransport(route))


def reply(content: str, finish: str = "stop", **usage: int) -> httpx.Response:
    return httpx.Response(200, json={"choices": [{"message": {"content": content}, "finish_reason": finish}],
                                     "usage": {"prompt_tokens": 5, "completion_tokens": 3, **usage}})


async def test_request_carries_the_step_schema():
    seen = {}

    def handler(req: httpx.Request) -> httpx.Response:
        seen.update(json.loads(req.content))
        return reply('{"kind":"finish","summary":"ok"}')

    out = await mock(handler).plan(request())
    assert out.action.kind == "finish" and out.turn.prompt_tokens == 5
    schema = seen["response_format"]["json_schema"]["schema"]
    assert [v["properties"]["kind"]["const"] for v in schema["oneOf"]] == ["tool_call", "finish"]


async def test_cached_prompt_tokens_are_not_counted_as_evaluated():
    planner = mock(lambda req: httpx.Response(200, json={
        "choices": [{"message": {"content": FINISH}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 40}}}))
    out = await planner.plan(request())
    assert (out.turn.prompt_tokens, out.turn.prompt_tokens_evaluated) == (50, 10)


@pytest.mark.parametrize(
    ("response", "error", "match"),
    [
        (reply('{"kind":"teleport"}'), PlannerOutputError, "kind"),
        (reply('{"kind":"tool_call","calls":[{"name":"ghost","arguments":{}}]}'), PlannerOutputError, "not exposed"),
        (reply('{"kind":"finish","summ', "length"), PlannerOutputError, "cut"),
        (httpx.Response(500, text="boom"), PlannerBackendError, "HTTP 500: boom"),
        (httpx.Response(400, json={"error": {"message": "bad schema"}}), PlannerBackendError, "HTTP 400: bad schema"),
        (httpx.Response(200, json={"nope": 1}), PlannerBackendError, "malformed"),
        (httpx.Response(200, text="<html>gateway</html>"), PlannerBackendError, "malformed"),
        (httpx.Response(200, json={"choices": [{"message": {"content": 7}}]}), PlannerBackendError, "malformed"),
    ],
)
async def test_bad_replies_are_typed(response, error, match):
    with pytest.raises(error, match=match):
        await mock(lambda req: response).plan(request())


async def test_a_forced_tool_call_cut_at_max_tokens_says_so():
    body = {"choices": [{"message": {"content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "pp_action", "arguments": '{"kind":"fin'}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 5, "completion_tokens": 8}}
    planner = mock(lambda req: httpx.Response(200, json=body), mode="tool_choice")
    planner.sampler = SamplerSettings(max_tokens=8)
    with pytest.raises(PlannerOutputError, match="cut at max_tokens=8"):
        await planner.plan(request())
