from __future__ import annotations

import json

import pytest

from pocketpilot.errors import TraceError
from pocketpilot.executor import ToolRegistry, tool
from pocketpilot.harness import HarnessConfig, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tracing.trace import actions_from_openai, episode_to_chat, episode_to_openai, read_trace


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
    session, episode = await run(tmp_path)
    messages = episode_to_openai(episode)
    # the system message is the one the planner was given, verbatim
    assert messages[0] == {"role": "system", "content": session.planner.requests[0].messages[0].content}
    assert messages[1] == {"role": "user", "content": "ping and pong"}
    first = messages[2]
    assert [c["function"]["name"] for c in first["tool_calls"]] == ["ping", "pong"]
    tool_msgs = [m for m in messages if m["role"] == "tool"]
    assert json.loads(tool_msgs[1]["content"])["data"] == -2
    # the unparseable output stays as plain assistant text, followed by its error
    assert {"role": "assistant", "content": "garbage output"} in messages
    # the run ends on the finish call itself: nothing was fed back, so no tool message follows
    assert messages[-1]["tool_calls"][0]["function"]["name"] == "pp_finish"
    recovered = actions_from_openai(messages)
    assert recovered == [s.action for s in episode.steps if s.action is not None]
    json.dumps(messages)  # serializable as is


def _plain(obj):
    """Validated TypedDicts hold their ``Iterable`` fields as lazy iterators: drain them."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list) or hasattr(obj, "__next__"):
        return [_plain(v) for v in obj]
    return obj


def _check_chat(chat: dict) -> None:
    """Every call is declared, every tool message answers a call, nothing is empty or made up."""
    declared = {t["function"]["name"] for t in chat["tools"]}
    calls = {c["id"]: c["function"]["name"] for m in chat["messages"] for c in m.get("tool_calls") or []}
    assert set(calls.values()) <= declared
    answered = [m["tool_call_id"] for m in chat["messages"] if m["role"] == "tool"]
    assert set(answered) <= set(calls) and len(answered) == len(set(answered))
    for m in chat["messages"]:
        if m["role"] == "tool":
            assert json.loads(m["content"]) not in ({}, None)


async def test_chat_view_validates_as_an_openai_request_and_reads_back(tmp_path):
    openai_chat = pytest.importorskip("openai.types.chat")
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from pydantic import TypeAdapter

    _, episode = await run(tmp_path)
    chat = episode_to_chat(episode)
    request = TypeAdapter(CompletionCreateParamsNonStreaming).validate_python(chat)
    assert request["model"] == "scripted"
    messages = _plain(TypeAdapter(list[openai_chat.ChatCompletionMessageParam]).validate_python(chat["messages"]))
    # a TypedDict drops keys it does not know: equality means every message has only OpenAI keys
    assert messages == chat["messages"]
    tools = TypeAdapter(list[openai_chat.ChatCompletionFunctionToolParam]).validate_python(chat["tools"])
    assert [t["function"]["name"] for t in tools] == ["ping", "pong", "pp_delegate", "pp_ask_user", "pp_refuse", "pp_finish"]
    _check_chat(chat)
    # the declared harness actions validate their own calls: pp_finish's schema wants a summary
    finish = next(t for t in chat["tools"] if t["function"]["name"] == "pp_finish")["function"]["parameters"]
    assert finish["required"] == ["summary"] and "kind" not in finish["properties"]
    back = actions_from_openai(messages)
    assert back == [s.action for s in episode.steps if s.action is not None]


async def test_skill_load_records_the_new_prompt_and_tools_and_the_chat_declares_them(tmp_path):
    from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
    from pocketpilot.harness import AllowAll
    from pocketpilot.skills import SkillLibrary

    planner = ScriptedPlanner(
        [
            {"kind": "load_skill", "name": "notes"},
            {"kind": "tool_call", "calls": [{"name": "list_notes", "arguments": {}}]},
            {"kind": "finish", "summary": "listed"},
        ]
    )
    session = Session(planner, SandboxExecutor(SandboxPhone()), tools=["create_note"], confirm=AllowAll(),
                      skills=SkillLibrary.builtin(), trace_dir=tmp_path)
    await session.run("list my notes")
    episode, complete = read_trace(session.trace_path)
    assert complete
    s0, s1, s2 = episode.steps
    assert s0.system_prompt == planner.requests[0].messages[0].content
    assert s1.system_prompt == planner.requests[1].messages[0].content != s0.system_prompt
    assert s2.system_prompt is None  # unchanged since step 1
    assert "list_notes" in {t.name for t in s1.tools_added} and not s2.tools_added
    assert "load_skill" in episode.header.kinds
    chat = episode_to_chat(episode)
    _check_chat(chat)
    systems = [m["content"] for m in chat["messages"] if m["role"] == "system"]
    assert systems == [s0.system_prompt, s1.system_prompt]
    assert {"list_notes", "pp_load_skill", "pp_finish"} <= {t["function"]["name"] for t in chat["tools"]}


def test_actions_from_malformed_messages_raise_trace_error():
    bad = [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                                                 "function": {"name": "pp_nonsense", "arguments": "{}"}}]}]
    with pytest.raises(TraceError, match="not a pocketpilot action"):
        actions_from_openai(bad)


def test_cli_show_openai_prints_the_chat_request(tmp_path):
    import asyncio

    from click.testing import CliRunner

    from pocketpilot.cli.main import cli

    session, _ = asyncio.run(run(tmp_path))
    result = CliRunner().invoke(cli, ["trace", "show", "--openai", str(session.trace_path)])
    assert result.exit_code == 0, result.output
    chat = json.loads(result.output)
    assert chat["messages"][0]["role"] == "system" and "pp_finish" in {t["function"]["name"] for t in chat["tools"]}
