"""MCP tools through the Executor protocol, against real MCP servers (the official `mcp` package)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from pocketpilot.contracts import ToolCall, ToolCallAction
from pocketpilot.errors import UsageError
from pocketpilot.executor.composite import CompositeExecutor
from pocketpilot.executor.mcp import (
    McpConnectionError,
    McpExecutor,
    McpTimeout,
    http_server,
    result_from_mcp,
    spec_from_mcp,
    stdio_server,
    tool_name,
)
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import Session
from pocketpilot.harness.base import Executor
from pocketpilot.harness.planners.scripted import ScriptedPlanner

SERVER = Path(__file__).with_name("mcp_fixture_server.py")


def test_names_and_specs_convert() -> None:
    assert tool_name("weird name!", None) == "weird_name_"
    assert tool_name("get", "wx") == "wx.get"
    assert tool_name("9lives", None) == "_9lives"
    assert tool_name("a b", None, taken={"a_b"}) == "a_b_2"
    assert len(tool_name("x" * 100, "p")) == 64
    hints = SimpleNamespace(read_only_hint=None, destructive_hint=True)
    tool = SimpleNamespace(
        description="Delete it.",
        title=None,
        input_schema={"type": "object"},
        output_schema=None,
        annotations=hints,
    )
    assert spec_from_mcp(tool, "rm", assume_destructive=False).destructive  # an explicit hint always counts
    plain = SimpleNamespace(**{**vars(tool), "annotations": None})
    assert spec_from_mcp(plain, "x").destructive and spec_from_mcp(plain, "x").open_world  # MCP's defaults
    assert not spec_from_mcp(plain, "x", assume_destructive=False).destructive
    reader = SimpleNamespace(
        **{**vars(tool), "annotations": SimpleNamespace(read_only_hint=True, destructive_hint=True)}
    )
    assert not spec_from_mcp(reader, "x", assume_destructive=True).destructive
    text = SimpleNamespace(type="text", text="boom")
    failed = result_from_mcp(SimpleNamespace(content=[text], structured_content=None, is_error=True))
    assert not failed.ok and failed.error is not None and failed.error.code == "mcp_tool_error"
    assert failed.error.message == "boom"
    two = result_from_mcp(SimpleNamespace(content=[text, text], structured_content=None, is_error=False))
    assert two.data == ["boom", "boom"]


@pytest.fixture
async def stdio_mcp(tmp_path: Path) -> AsyncIterator[McpExecutor]:
    with (tmp_path / "server.log").open("w") as errlog:
        ex = McpExecutor(stdio_server(sys.executable, [str(SERVER), "stdio"]), timeout_s=20, errlog=errlog)
        async with ex:
            yield ex


@pytest.mark.slow
async def test_stdio_server_tools_calls_and_errors(stdio_mcp: McpExecutor) -> None:
    ex = stdio_mcp
    assert isinstance(ex, Executor)
    specs = {t.name: t for t in ex.tools()}
    assert {"add", "forecast", "refuse", "weird_name_", "crash", "sleep"} <= set(specs)
    assert specs["forecast"].read_only and not specs["forecast"].needs_confirmation  # annotated by the server
    assert specs["add"].destructive and specs["add"].open_world and not specs["add"].idempotent  # MCP's defaults
    assert specs["add"].parameters["required"] == ["a", "b"]  # inputSchema -> parameters
    assert (
        specs["forecast"].result_schema is not None
        and "celsius" in specs["forecast"].result_schema["properties"]
    )
    assert (await ex.call(ToolCall(name="add", arguments={"a": 2, "b": 40}))).data == {"result": 42}
    forecast = await ex.call(ToolCall(name="forecast", arguments={"city": "Oslo"}))
    assert forecast.ok and forecast.data == {"city": "Oslo", "celsius": 21.5}
    assert (await ex.call(ToolCall(name="weird_name_"))).data == {"result": "ok"}  # routed to "weird name!"
    refused = await ex.call(ToolCall(name="refuse", arguments={"reason": "card declined"}))
    assert not refused.ok and refused.error is not None
    assert refused.error.code == "mcp_tool_error" and "card declined" in refused.error.message
    bad = await ex.call(ToolCall(name="add", arguments={"a": "two"}))
    assert bad.error is not None and bad.error.code == "invalid_arguments"
    unknown = await ex.call(ToolCall(name="nope"))
    assert unknown.error is not None and unknown.error.code == "unknown_tool"
    many = await asyncio.gather(
        *(ex.call(ToolCall(name="add", arguments={"a": i, "b": i})) for i in range(10))
    )
    assert [r.data["result"] for r in many] == [2 * i for i in range(10)]  # concurrent calls, none crossed

    phone = SandboxPhone()
    composite = CompositeExecutor([SandboxExecutor(phone, ["settings"]), ex])
    planner = ScriptedPlanner(
        [
            ToolCallAction(
                calls=[
                    ToolCall(name="set_wifi", arguments={"enabled": False}),
                    ToolCall(name="forecast", arguments={"city": "Rome"}),
                ]
            ),
            {"kind": "finish", "summary": "done"},
        ]
    )
    episode = await Session(planner, composite).run("wifi off, and the weather in Rome")
    assert episode.stop_reason == "finish"
    wifi, weather = episode.steps[0].results
    assert wifi.ok and phone.state.settings.wifi is False and weather.data["city"] == "Rome"
    unannotated = ScriptedPlanner([ToolCallAction(calls=[ToolCall(name="add_note", arguments={"text": "x"})])])
    denied = (await Session(unannotated, composite).run("note x")).steps[0].results[0]
    assert denied.error is not None and denied.error.code == "confirmation_denied"  # DenyAll, MCP's defaults


@pytest.mark.slow
async def test_stdio_server_dies_mid_session(stdio_mcp: McpExecutor) -> None:
    ex = stdio_mcp
    with pytest.raises(McpConnectionError, match="crash"):
        await ex.call(ToolCall(name="crash"))
    with pytest.raises(McpConnectionError, match="reconnect"):
        await ex.call(ToolCall(name="add", arguments={"a": 1, "b": 1}))
    # a read-only tool: it needs no confirmation, so the call reaches the dead server
    planner = ScriptedPlanner([ToolCallAction(calls=[ToolCall(name="forecast", arguments={"city": "Oslo"})])])
    episode = await Session(planner, ex).run("weather")
    assert episode.stop_reason == "device_lost" and "MCP server" in episode.stop_detail
    await ex.reconnect()  # a fresh server process
    assert (await ex.call(ToolCall(name="add", arguments={"a": 1, "b": 1}))).data == {"result": 2}


@pytest.mark.slow
async def test_stdio_server_that_cannot_start(tmp_path: Path) -> None:
    with (tmp_path / "err.log").open("w") as errlog:
        ex = McpExecutor(
            stdio_server(sys.executable, ["-c", "import sys; sys.exit(1)"]), timeout_s=10, errlog=errlog
        )
        with pytest.raises(McpConnectionError, match="could not start"):
            await ex.start()
    with pytest.raises(McpConnectionError, match="not started"):
        await ex.call(ToolCall(name="add"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_mcp_server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = _free_port()
    with (tmp_path / "http.log").open("w") as log:
        proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"MCP HTTP server did not start: {(tmp_path / 'http.log').read_text()}"
                    ) from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.slow
async def test_http_server_calls_timeout_and_death(
    http_mcp_server: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, proc = http_mcp_server
    async with McpExecutor(http_server(url), prefix="remote", timeout_s=2) as ex:
        assert "remote.add" in {t.name for t in ex.tools()}
        assert (await ex.call(ToolCall(name="remote.add", arguments={"a": 5, "b": 6}))).data == {"result": 11}
        failed = await ex.call(ToolCall(name="remote.refuse", arguments={"reason": "nope"}))
        assert failed.error is not None and failed.error.code == "mcp_tool_error"
        with pytest.raises(McpTimeout):
            await ex.call(ToolCall(name="remote.sleep", arguments={"seconds": 4}))
        proc.kill()  # the server dies mid-session
        proc.wait(timeout=10)
        with pytest.raises(McpConnectionError):
            await ex.call(ToolCall(name="remote.add", arguments={"a": 1, "b": 2}))
    with pytest.raises(McpConnectionError, match="could not start"):
        await McpExecutor(http_server(url), timeout_s=5).start()


def test_missing_extra_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # what an install without the extra looks like
    with pytest.raises(UsageError, match=r"pocketpilot\[mcp\]"):
        McpExecutor(http_server("http://127.0.0.1:1/mcp"))
    with pytest.raises(UsageError, match="URL"):
        http_server("127.0.0.1:1")
