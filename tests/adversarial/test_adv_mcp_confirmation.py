"""An MCP host trying to get a destructive call past confirmation (``pocketpilot mcp serve``).

The server's own rules decide: a direct call is a harness run with the confirmation policy in
force, a host that cannot be asked is denied, and an "allow" counts only for the call it was
given for. The host here is the real mcp client SDK, connected to the server in-process.
"""

from __future__ import annotations

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
