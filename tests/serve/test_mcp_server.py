"""`pocketpilot mcp serve` driven by the mcp client SDK over stdio: the server is the CLI, started by the test."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, types

ROOT = Path(__file__).resolve().parents[2]
POWER_OFF = [{"kind": "tool_call", "calls": [{"name": "power_off", "arguments": {}}]},
             {"kind": "finish", "summary": "phone is off"}]


def server(tmp_path: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, cwd=str(ROOT), args=[
        "-m", "pocketpilot", "mcp", "serve", "--eta", "none", "--apps", "power,notes",
        "--trace-dir", str(tmp_path / "traces"), *extra])


def answering(allow: bool, action: str = "accept") -> Any:
    asked: list[str] = []

    async def callback(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action=action, content={"allow": allow} if action == "accept" else None)

    callback.asked = asked  # type: ignore[attr-defined]
    return callback


async def powered_on(client: Client) -> bool:
    info = await client.call_tool("get_device_info", {})
    return not info.is_error  # a phone that is off fails every tool with device_off


@pytest.mark.slow
async def test_tools_carry_their_declared_semantics(tmp_path: Path) -> None:
    async with Client(server(tmp_path)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["get_device_info"].annotations.read_only_hint is True
    assert tools["power_off"].annotations.destructive_hint is True
    assert tools["power_off"].annotations.read_only_hint is False
    assert tools["delete_note"].meta["io.pocketpilot/semantics"]["effect"] == "delete"
    assert tools["create_note"].annotations.destructive_hint is False
    assert tools["power_off"].input_schema["type"] == "object"
    agent = tools["run_request"]
    assert agent.input_schema["required"] == ["request"] and agent.annotations.destructive_hint is True


@pytest.mark.slow
async def test_a_direct_destructive_call_without_elicitation_is_denied(tmp_path: Path) -> None:
    async with Client(server(tmp_path)) as client:
        result = await client.call_tool("power_off", {})
        assert result.is_error and "denied" in result.content[0].text and "elicitation" in result.content[0].text
        assert await powered_on(client)
    # the refused call is in a trace like any run's
    traces = [json.loads(line) for f in (tmp_path / "traces").glob("*.jsonl") for line in f.read_text().splitlines()]
    assert any(r["type"] == "end" and r["stop_reason"] == "denied" for r in traces)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])  # an InputRequiredResult round / elicitation/create
async def test_a_direct_destructive_call_asks_through_elicitation(tmp_path: Path, mode: str) -> None:
    decline = answering(False)
    async with Client(server(tmp_path), elicitation_callback=decline, mode=mode) as client:
        result = await client.call_tool("power_off", {})
        assert result.is_error and await powered_on(client)
        assert decline.asked == ["power_off() is destructive: allow it?"]
    accept = answering(True)
    async with Client(server(tmp_path), elicitation_callback=accept, mode=mode) as client:
        result = await client.call_tool("power_off", {})
        assert not result.is_error and result.structured_content["data"] == {"powered_on": False}
        assert not await powered_on(client)
        assert len(accept.asked) == 1
        read = await client.call_tool("list_notes", {})  # not destructive: nobody is asked
        assert len(accept.asked) == 1 and read.is_error  # (the phone is off now)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_run_request_asks_mid_run_and_is_denied_where_it_cannot_ask(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]},
                                  *POWER_OFF]))
    async with Client(server(tmp_path, "--script", str(script)), mode=mode) as client:
        out = (await client.call_tool("run_request", {"request": "turn the phone off"})).structured_content
        assert out["stop_reason"] == "denied" and "elicitation" in out["detail"]
        assert await powered_on(client)
    accept = answering(True)
    async with Client(server(tmp_path, "--script", str(script)), elicitation_callback=accept, mode=mode) as client:
        out = (await client.call_tool("run_request", {"request": "turn the phone off"})).structured_content
        assert out["stop_reason"] == "finish" and out["steps"] == 3
        assert accept.asked == ["power_off() is destructive: allow it?"]
        assert not await powered_on(client)
        trace = [json.loads(line) for line in Path(out["trace"]).read_text().splitlines()]
        assert sum(1 for r in trace if r["type"] == "step") == 3  # the read ran once: the run waited, it did not restart


@pytest.mark.slow
async def test_streamable_http_serves_the_same_tools_and_rules_behind_the_token(tmp_path: Path) -> None:
    import asyncio
    import socket
    import subprocess

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    token_file = tmp_path / "token"
    proc = subprocess.Popen([sys.executable, "-m", "pocketpilot", "mcp", "serve", "--transport", "http", "--port",
                             str(port), "--eta", "none", "--apps", "power", "--no-agent", "--token-file", str(token_file),
                             "--trace-dir", str(tmp_path / "traces")], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def with_token(token: str) -> Any:
        return streamable_http_client(url, http_client=httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}))

    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(150):
            try:
                async with httpx.AsyncClient() as probe:
                    await probe.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None
                await asyncio.sleep(0.2)
        # the token is serve's: generated at the first start, readable by the user only
        token = token_file.read_text().strip()
        assert token and token_file.stat().st_mode & 0o077 == 0
        async with httpx.AsyncClient() as raw:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"}):
                refused = await raw.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
                assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"
        with pytest.raises(Exception):  # noqa: B017, PT011 - the SDK's own error for a refused connection
            async with Client(with_token("wrong")) as client:
                await client.list_tools()
        async with Client(with_token(token)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["power_off"].annotations.destructive_hint is True and "run_request" not in tools
            denied = await client.call_tool("power_off", {})
            assert denied.is_error and "elicitation" in denied.content[0].text
            assert await powered_on(client)
        accept = answering(True)
        async with Client(with_token(token), elicitation_callback=accept) as client:
            assert not (await client.call_tool("power_off", {})).is_error and len(accept.asked) == 1
            assert not await powered_on(client)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_streamable_http_refuses_a_lan_host_without_insecure_lan() -> None:
    from click.testing import CliRunner

    from pocketpilot.cli.main import cli

    result = CliRunner().invoke(cli, ["mcp", "serve", "--transport", "http", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--insecure-lan" in result.output


def test_a_token_file_is_refused_over_stdio(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from pocketpilot.cli.main import cli

    token = tmp_path / "token"
    token.write_text("a-secret-token-of-enough-length\n")
    result = CliRunner().invoke(cli, ["mcp", "serve", "--token-file", str(token)])
    assert result.exit_code == 2 and "HTTP" in result.output
