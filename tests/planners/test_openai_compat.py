"""OpenAICompatPlanner against llama-cpp-python's own server on loopback (slow), and fault cases."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import httpx
import pytest

from pocketpilot.contracts import SamplerSettings, ToolSpec
from pocketpilot.errors import PlannerBackendError, PlannerOutputError
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.base import ChatMessage, PlanRequest
from pocketpilot.harness.planners import OpenAICompatPlanner
from pocketpilot.tasks import load_suite, prepare


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(test_gguf, tmp_path_factory):
    port = free_port()
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    log = log_path.open("wb")  # a PIPE would fill up with load logs and block the server
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(test_gguf), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", "4096", "--model_alias", "planner"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {log_path.read_text()[-500:]}")
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            raise RuntimeError("llama server did not come up")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.mark.slow
async def test_real_server_steps_are_valid_actions(llama_server):
    spec = next(t for t in load_suite() if t.id == "settings-wifi-off")
    run = prepare(spec)
    planner = OpenAICompatPlanner(llama_server, "planner", sampler=SamplerSettings(max_tokens=160),
                                  schema_mode="json_object_schema")
    try:
        episode = await Session(planner, run.executor, config=HarnessConfig(max_steps=3), confirm=AllowAll(),
                                verifier=run.verifier).run(spec.goal)
    finally:
        await planner.aclose()
    assert episode.steps
    for step in episode.steps:
        assert step.action is not None, step.planner.raw
        assert step.planner.prompt_tokens > 0 and step.planner.completion_tokens > 0
    assert episode.header.planner.backend.startswith("openai-compat")


def request() -> PlanRequest:
    tools = [ToolSpec(name="ping", parameters={"type": "object", "properties": {}})]
    return PlanRequest(messages=[ChatMessage(role="user", content="hi")], tools=tools, kinds=("tool_call", "finish"))


def mock(handler) -> OpenAICompatPlanner:
    return OpenAICompatPlanner("http://test/v1", "m", transport=httpx.MockTransport(handler))


def reply(content: str, finish: str = "stop") -> httpx.Response:
    return httpx.Response(200, json={"choices": [{"message": {"content": content}, "finish_reason": finish}],
                                     "usage": {"prompt_tokens": 5, "completion_tokens": 3}})


async def test_request_carries_the_step_schema():
    seen = {}

    def handler(req: httpx.Request) -> httpx.Response:
        seen.update(json.loads(req.content))
        return reply('{"kind":"finish","summary":"ok"}')

    out = await mock(handler).plan(request())
    assert out.action.kind == "finish" and out.turn.prompt_tokens == 5
    schema = seen["response_format"]["json_schema"]["schema"]
    assert [v["properties"]["kind"]["const"] for v in schema["oneOf"]] == ["tool_call", "finish"]


@pytest.mark.parametrize(
    ("response", "error", "match"),
    [
        (reply('{"kind":"teleport"}'), PlannerOutputError, "kind"),
        (reply('{"kind":"tool_call","calls":[{"name":"ghost","arguments":{}}]}'), PlannerOutputError, "not exposed"),
        (reply('{"kind":"finish","summ', "length"), PlannerOutputError, "cut"),
        (httpx.Response(500, text="boom"), PlannerBackendError, "HTTP 500"),
        (httpx.Response(200, json={"nope": 1}), PlannerBackendError, "malformed"),
    ],
)
async def test_bad_replies_are_typed(response, error, match):
    with pytest.raises(error, match=match):
        await mock(lambda req: response).plan(request())


async def test_unreachable_server():
    planner = OpenAICompatPlanner(f"http://127.0.0.1:{free_port()}/v1", "m", timeout_s=2)
    with pytest.raises(PlannerBackendError, match="ConnectError"):
        await planner.plan(request())
    await planner.aclose()
