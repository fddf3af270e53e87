from __future__ import annotations

import json

import pytest

from pocketpilot.errors import TraceError
from pocketpilot.executor import ToolRegistry, tool
from pocketpilot.harness import HarnessConfig, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.trace import actions_from_openai, episode_to_openai, read_trace


@tool
def ping(n: int) -> int:
    """Ping."""
    return n


@tool
def pong(n: int) -> int:
    """Pong."""
    return -n


ACTIONS = [
    {"kind": "tool_call", "calls": [{"name": "ping", "arguments": {"n": 1}}, {"name": "pong", "arguments": {"n": 2}}]},
    "garbage output",
    {"kind": "tool_call", "calls": [{"name": "ping", "arguments": {"n": "x"}}]},
    {"kind": "finish", "summary": "all done"},
]


async def run(tmp_path):
    session = Session(ScriptedPlanner(ACTIONS), ToolRegistry([ping, pong]), trace_dir=tmp_path)
    episode = await session.run("ping and pong")
    return session, episode


async def test_trace_is_jsonl_with_header_steps_end(tmp_path):
    session, episode = await run(tmp_path)
    records = [json.loads(line) for line in session.trace_path.read_text().splitlines()]
    assert [r["type"] for r in records] == ["header", "step", "step", "step", "step", "end"]
    header = records[0]["header"]
    assert header["planner"]["backend"] == "scripted"
    assert header["pocketpilot_version"] and [t["name"] for t in header["tools"]] == ["ping", "pong"]
    assert header["harness_config"]["max_steps"] == HarnessConfig().max_steps
    assert records[-1]["stop_reason"] == "finish"


async def test_torn_trace_keeps_completed_steps(tmp_path):
    session, episode = await run(tmp_path)
    lines = session.trace_path.read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines[:3]) + "\n" + lines[3][:25])
    loaded, complete = read_trace(torn)
    assert not complete
    assert loaded.steps == episode.steps[:2]
    assert loaded.stop_reason is None


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("", "no header"),
        ('{"type": "step", "step": {}}\n{"type":"end"}\n', "malformed"),
        ('{"type": "header", "schema": 99, "header": {}}\n', "newer"),
        ('not json\n{"type":"end"}\n', "invalid JSON"),
        ('{"type": "weird"}\n{"type":"end"}\n', "unknown record"),
    ],
)
def test_bad_traces_raise_typed_errors(tmp_path, content, match):
    path = tmp_path / "t.jsonl"
    path.write_text(content)
    with pytest.raises(TraceError, match=match):
        read_trace(path)
    with pytest.raises(TraceError, match="cannot read"):
        read_trace(tmp_path / "missing.jsonl")


async def test_openai_conversion_is_lossless(tmp_path):
    _, episode = await run(tmp_path)
    messages = episode_to_openai(episode)
    assert messages[0] == {"role": "user", "content": "ping and pong"}
    first = messages[1]
    assert [c["function"]["name"] for c in first["tool_calls"]] == ["ping", "pong"]
    tool_msgs = [m for m in messages if m["role"] == "tool"]
    assert {m["tool_call_id"] for m in tool_msgs} >= {c["id"] for c in first["tool_calls"]}
    assert json.loads(tool_msgs[1]["content"])["data"] == -2
    # the unparseable output stays as plain assistant text, followed by its error
    assert {"role": "assistant", "content": "garbage output"} in messages
    assert messages[-2]["tool_calls"][0]["function"]["name"] == "pp_finish"
    recovered = actions_from_openai(messages)
    assert recovered == [s.action for s in episode.steps if s.action is not None]
    json.dumps(messages)  # serializable as is
