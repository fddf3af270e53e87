"""The OpenAI-compatible planner against llama-cpp-python's own server on loopback (slow).

The server runs the 0.5B test model for the whole module and is killed afterwards, also when a
test fails. Assertions are structural (steps, ids, modes, exit codes), never model text.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from pocketpilot.contracts import SamplerSettings, Step, ToolCall, ToolCallAction, ToolResult, ToolSpec
from pocketpilot.errors import PlannerOutputError
from pocketpilot.harness.base import ChatMessage, PlanRequest
from pocketpilot.harness.planners import OpenAICompatPlanner
from pocketpilot.models.store import DEFAULT_MODEL

pytestmark = pytest.mark.slow

TASK = "conditional-low-battery"
"""A dev-split task the 0.5B takes in three steps (read, act, finish)."""

_ACCESS = re.compile(r'"(GET|POST) (/v1/\S+) HTTP/[\d.]+" (\d{3})')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    log: Path
    model_id: str

    def access_since(self, offset: int) -> list[tuple[str, str, int]]:
        """(method, path, status) of the requests logged after byte ``offset`` of the log."""
        with self.log.open("rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
        return [(m, p, int(s)) for m, p, s in _ACCESS.findall(text)]


@pytest.fixture(scope="module")
def llama_server(test_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    port = free_port()
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(test_gguf), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", "4096"]
    with log_path.open("wb") as log:  # a PIPE would fill up with load logs and block the server
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}/v1"
            deadline = time.monotonic() + 120
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"llama_cpp.server exited: {log_path.read_text()[-800:]}")
                try:
                    listing = httpx.get(f"{url}/models", timeout=2)
                    if listing.status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail("llama_cpp.server did not come up within 120s")
                time.sleep(0.5)
            (entry,) = listing.json()["data"]
            yield Server(url, log_path, entry["id"])
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)


async def test_load_reads_the_served_model_and_detects_the_schema_mode(llama_server: Server):
    planner = OpenAICompatPlanner(llama_server.url)
    try:
        await planner.load()
    finally:
        await planner.aclose()
    assert planner.info.model == llama_server.model_id != DEFAULT_MODEL
    # llama-cpp-python's server refuses response_format json_schema and honours json_object + schema
    assert planner.info.output_mode == "json_object_schema"


def test_cli_run_of_a_task_steps_through_the_real_server(llama_server: Server, tmp_path: Path):
    offset = llama_server.log.stat().st_size
    out = subprocess.run(
        [sys.executable, "-m", "pocketpilot", "run", "--endpoint", llama_server.url, "--task-id", TASK,
         "--output-mode", "json_object_schema", "--max-tokens", "160", "--trace-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"},
    )
    (path,) = tmp_path.glob("*.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    header, steps, end = records[0]["header"], [r["step"] for r in records[1:-1]], records[-1]
    assert header["planner"]["model"] == llama_server.model_id
    assert header["planner"]["output_mode"] == "json_object_schema"
    planned = [s for s in steps if s["planner"] is not None]  # not the calls the harness ran itself
    assert len(planned) >= 3, out.stdout
    for step in planned:
        assert step["planner"]["prompt_tokens"] > 0 and step["planner"]["completion_tokens"] > 0
    chats = [a for a in llama_server.access_since(offset) if a[1] == "/v1/chat/completions"]
    assert len(chats) == len(planned)
    assert {status for _, _, status in chats} == {200}, chats  # steps 2+ (tool history) accepted
    assert end["stop_reason"] != "planner_error", end
    assert out.returncode == (1 if end["stop_reason"] in ("planner_error", "device_lost") else 0), out.stderr


TOOLS = [
    ToolSpec(name="get_settings", description="Read wifi and bluetooth state."),
    ToolSpec(name="set_wifi", description="Turn wifi on or off.",
             parameters={"type": "object", "properties": {"enabled": {"type": "boolean"}}, "required": ["enabled"]}),
]


def second_step_request() -> PlanRequest:
    """A context at step 2: one recorded step (a call and its result) in the history."""
    step = Step(index=0, context_digest="d", action=ToolCallAction(calls=[ToolCall(name="get_settings")]),
                results=[ToolResult.success({"wifi": True, "bluetooth": False})])
    rules = ('You operate a phone. Reply with one JSON action: {"kind":"tool_call","calls":[{"name":...,'
             '"arguments":{...}}]} or {"kind":"finish","summary":"..."}. Tools: get_settings(), set_wifi(enabled: bool).')
    messages = [
        ChatMessage(role="system", content=rules, section="prefix"),
        ChatMessage(role="user", content="Turn off the wifi if it is on.", section="request"),
        ChatMessage(role="assistant", content=step.action.model_dump_json(), step=step),
        ChatMessage(role="tool", content='{"ok": true, "data": {"wifi": true, "bluetooth": false}}', step=step),
    ]
    return PlanRequest(messages=messages, tools=TOOLS, kinds=("tool_call", "finish"))


@pytest.mark.parametrize("mode", ["json_object_schema", "tool_choice", "json_object", "prompt"])
async def test_every_mode_the_server_supports_accepts_a_tool_history(llama_server: Server, mode: str):
    planner = OpenAICompatPlanner(llama_server.url, output_mode=mode, sampler=SamplerSettings(max_tokens=64))
    try:
        try:
            out = await planner.plan(second_step_request())
        except PlannerOutputError:
            # without a schema the server only promises JSON (or text): a typed rejection is the contract
            assert mode in ("json_object", "prompt")
        else:
            assert out.action.kind in ("tool_call", "finish")
            assert out.turn.prompt_tokens > 0 and out.turn.completion_tokens > 0
    finally:
        await planner.aclose()
