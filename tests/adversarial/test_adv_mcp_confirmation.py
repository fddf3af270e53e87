"""An MCP host trying to get a destructive call past confirmation (``pocketpilot mcp serve``).

The server's own rules decide: a direct call is a harness run with the confirmation policy in
force, a host that cannot be asked is denied, and an "allow" counts only for the call it was
given for. The host here is the real mcp client SDK, connected to the server in-process.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, types
from mcp.shared.exceptions import MCPError

from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.serve.mcp_server import CONFIRM_KEY, PhoneMcpServer


def build(tmp_path: Path, script: list[Any] | None = None) -> tuple[PhoneMcpServer, SandboxPhone]:
    phone = SandboxPhone()
    planner = (lambda: ScriptedPlanner(script, name="attack")) if script is not None else None
    server = PhoneMcpServer(SandboxExecutor(phone, ["power", "notes"]), planner, trace_dir=tmp_path / "traces")
    return server, phone


def allow(asked: list[str]) -> Any:
    async def callback(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"allow": True})

    return callback


def allowed_answer() -> dict[str, Any]:
    return {CONFIRM_KEY: types.ElicitResult(action="accept", content={"allow": True})}


async def test_a_host_that_cannot_be_asked_is_denied_directly_and_through_the_agent(tmp_path: Path) -> None:
    server, phone = build(tmp_path, [{"kind": "tool_call", "calls": [{"name": "power_off", "arguments": {}}]},
                                     {"kind": "finish", "summary": "done"}])
    async with Client(server) as client:
        direct = await client.call_tool("power_off", {})
        agent = await client.call_tool("run_request", {"request": "power off"})
    assert direct.is_error and agent.structured_content["stop_reason"] == "denied"
    assert phone.state.device.powered_on


async def test_an_answer_nobody_asked_for_runs_nothing(tmp_path: Path) -> None:
    server, phone = build(tmp_path)
    async with Client(server, elicitation_callback=allow([])) as client:
        # "allow" sent along with the first call, before any question: asked, not run
        first = await client.session.call_tool("power_off", {}, input_responses=allowed_answer(),
                                               allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert phone.state.device.powered_on
        # a made-up request state is refused by the server's seal
        with pytest.raises(MCPError):
            await client.session.call_tool("power_off", {}, input_responses=allowed_answer(),
                                           request_state=json.dumps({"call": "x"}), allow_input_required=True)
        assert phone.state.device.powered_on


async def test_an_allow_for_one_call_does_not_carry_to_another(tmp_path: Path) -> None:
    server, phone = build(tmp_path)
    async with Client(server, elicitation_callback=allow([])) as client:
        made = await client.call_tool("create_note", {"title": "keep", "body": "mine"})
        other = await client.call_tool("create_note", {"title": "keep too", "body": "mine"})
        keep, keep_too = made.structured_content["data"]["id"], other.structured_content["data"]["id"]
        asked = await client.session.call_tool("delete_note", {"note_id": keep}, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        # the state minted for deleting one note, replayed with an allow to delete the other
        replay = await _call_or_error(client, "delete_note", {"note_id": keep_too}, asked.request_state)
        assert replay is None or isinstance(replay, types.InputRequiredResult) or replay.is_error
        # ... and for a different tool
        power = await _call_or_error(client, "power_off", {}, asked.request_state)
        assert power is None or isinstance(power, types.InputRequiredResult) or power.is_error
    assert phone.state.device.powered_on
    assert {"keep", "keep too"} <= {n.title for n in phone.state.notes.items}


async def _call_or_error(client: Client, name: str, args: dict[str, Any], state: str | None) -> Any:
    try:
        return await client.session.call_tool(name, args, input_responses=allowed_answer(), request_state=state,
                                              allow_input_required=True)
    except MCPError:
        return None  # the server refused the state outright


async def test_the_asked_call_runs_once_answered(tmp_path: Path) -> None:
    server, phone = build(tmp_path)
    asked: list[str] = []
    async with Client(server, elicitation_callback=allow(asked)) as client:
        result = await client.call_tool("power_off", {})
    assert not result.is_error and asked == ["power_off() is destructive: allow it?"]
    assert not phone.state.device.powered_on


READ_THEN_OFF = [{"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]},
                 {"kind": "tool_call", "calls": [{"name": "power_off", "arguments": {}}]},
                 {"kind": "finish", "summary": "off"}]


async def test_a_paused_agent_run_takes_only_the_answer_to_its_own_question(tmp_path: Path) -> None:
    server, phone = build(tmp_path, READ_THEN_OFF)
    async with Client(server, elicitation_callback=allow([])) as client:
        first = await client.session.call_tool("run_request", {"request": "turn it off"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        assert "power_off" in first.input_requests[CONFIRM_KEY].params.message
        # no answer: asked again, the run still waiting at the call
        again = await client.session.call_tool("run_request", {"request": "turn it off"},
                                               request_state=first.request_state, allow_input_required=True)
        assert isinstance(again, types.InputRequiredResult) and phone.state.device.powered_on
        # a declined answer: the run stops as denied, the phone stays on
        no = {CONFIRM_KEY: types.ElicitResult(action="decline")}
        done = await client.session.call_tool("run_request", {"request": "turn it off"}, input_responses=no,
                                              request_state=again.request_state, allow_input_required=True)
        assert isinstance(done, types.CallToolResult) and done.structured_content["stop_reason"] == "denied"
        assert phone.state.device.powered_on
        # the run is over: its state, replayed with an allow, starts nothing
        replay = await _call_or_error(client, "run_request", {"request": "turn it off"}, again.request_state)
        assert replay is None or replay.is_error
    assert phone.state.device.powered_on


async def test_an_unanswered_agent_question_is_denied_after_the_timeout(tmp_path: Path) -> None:
    phone = SandboxPhone()
    server = PhoneMcpServer(SandboxExecutor(phone, ["power", "notes"]),
                            lambda: ScriptedPlanner(READ_THEN_OFF, name="attack"), trace_dir=tmp_path / "traces",
                            confirm_timeout_s=0.3)
    async with Client(server, elicitation_callback=allow([])) as client:
        first = await client.session.call_tool("run_request", {"request": "turn it off"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        await asyncio.sleep(0.6)  # the client walks away
        late = await _call_or_error(client, "run_request", {"request": "turn it off"}, first.request_state)
        assert late is None or late.is_error
    assert phone.state.device.powered_on
    ends = [json.loads(line) for f in (tmp_path / "traces").glob("*.jsonl") for line in f.read_text().splitlines()
            if '"type": "end"' in line]
    assert [e["stop_reason"] for e in ends] == ["denied"] and "no answer within 0.3s" in ends[0]["stop_detail"]
