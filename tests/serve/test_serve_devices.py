"""Devices under the service: one that drops mid-run, and two sessions sharing one phone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _serve_support import kind, question, sse

from pocketpilot.contracts import ToolCall, ToolResult, ToolSpec
from pocketpilot.errors import DeviceOfflineError
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.serve import OpenedDevice

TWO_READS = [{"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]},
             {"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]},
             {"kind": "finish", "summary": "read it twice"}]
POWER_OFF = [{"kind": "tool_call", "calls": [{"name": "power_off", "arguments": {}}]},
             {"kind": "finish", "summary": "phone is off"}]


class DropsAfter:
    """A sandbox phone whose connection drops after ``calls`` calls (an unplugged cable)."""

    def __init__(self, calls: int) -> None:
        self.phone = SandboxPhone()
        self._inner = SandboxExecutor(self.phone, ["power"])
        self._left = calls
        self.closed = False

    def tools(self) -> list[ToolSpec]:
        return self._inner.tools()

    async def call(self, call: ToolCall) -> ToolResult:
        if self._left <= 0:
            raise DeviceOfflineError("emulator-5554", "device offline")
        self._left -= 1
        return await self._inner.call(call)


async def test_a_device_that_drops_mid_run_is_a_typed_error_and_keeps_the_trace(make_server) -> None:  # type: ignore[no-untyped-def]
    devices: list[DropsAfter] = []

    async def open_device(spec: Any) -> OpenedDevice:
        device = DropsAfter(1)
        devices.append(device)

        async def close() -> None:
            device.closed = True

        return OpenedDevice(device, "adb:emulator-5554", close=close, state=device.phone)

    async with make_server(devices=open_device) as s:
        sid, key = await s.open(TWO_READS)
        await s.send(sid, key, "read the device twice")
        got = await sse(s.client, f"/v1/sessions/{sid}/events", s.auth(key),
                        until=lambda e: e.event == "state" and e.data["state"] == "device_lost")
        end = next(e.data for e in got if e.event == "end")
        assert end["stop_reason"] == "device_lost"
        error = next(e.data for e in got if e.event == "error")
        assert error["code"] == "device_lost" and "offline" in error["message"]
        status = (await s.client.get(f"/v1/sessions/{sid}", headers=s.auth(key))).json()
        assert status["state"] == "device_lost" and status["error"]["code"] == "device_lost"
        r = await s.send(sid, key, "again")
        assert r.status_code == 503 and r.json()["error"]["code"] == "device_lost"
        assert "\n" not in r.json()["error"]["message"]
        # nothing lost: the step that ran is in the trace, served as recorded
        (episode,) = status["traces"]
        trace = (await s.client.get(f"/v1/sessions/{sid}/traces/{episode}", headers=s.auth(key))).text
        assert trace.count('"type": "step"') >= 1 and '"device_lost"' in trace
        await s.client.delete(f"/v1/sessions/{sid}", headers=s.auth(key))
        assert devices[0].closed


async def test_sessions_sharing_a_phone_take_turns(make_server) -> None:  # type: ignore[no-untyped-def]
    phone = SandboxPhone()

    async def same_phone(spec: Any) -> OpenedDevice:
        return OpenedDevice(SandboxExecutor(phone, ["power"]), "adb:the-one-phone", state=phone)

    async with make_server(devices=same_phone) as s:
        a_sid, a_key = await s.open(POWER_OFF)
        b_sid, b_key = await s.open(TWO_READS[1:])
        await s.send(a_sid, a_key, "turn it off")
        qa = (await sse(s.client, f"/v1/sessions/{a_sid}/events", s.auth(a_key), until=question))[-1]
        await s.send(b_sid, b_key, "read the phone")
        queued = await sse(s.client, f"/v1/sessions/{b_sid}/events", s.auth(b_key),
                           until=lambda e: e.event == "state" and e.data["state"] == "queued")
        await asyncio.sleep(0.1)
        status = (await s.client.get(f"/v1/sessions/{b_sid}", headers=s.auth(b_key))).json()
        assert status["state"] == "queued"  # waits while the phone is busy with a's run
        await s.client.post(f"/v1/sessions/{a_sid}/answers", json={"question_id": qa.data["id"], "answer": "deny"},
                            headers=s.auth(a_key))
        rest = await sse(s.client, f"/v1/sessions/{b_sid}/events", s.auth(b_key), until=kind("end"),
                         last_id=queued[-1].id)
        assert rest[-1].data["stop_reason"] == "finish"
        assert phone.state.device.powered_on


async def test_a_planner_that_fails_to_load_is_an_error_event_and_the_session_stays_usable(served) -> None:  # type: ignore[no-untyped-def]
    from pocketpilot.errors import ModelIntegrityError

    sid, key = await served.open(TWO_READS[1:])
    planner = served.scripts.made[-1]
    real_load = planner.load
    failures = [ModelIntegrityError("model.gguf", "sha256 mismatch")]

    async def load() -> None:
        if failures:
            raise failures.pop()
        await real_load()

    planner.load = load  # type: ignore[method-assign]
    await served.send(sid, key, "read the phone")
    got = await sse(served.client, f"/v1/sessions/{sid}/events", served.auth(key),
                    until=lambda e: e.event == "state" and e.data["state"] == "idle" and e.id > 2)
    error = next(e.data for e in got if e.event == "error")
    assert error["code"] == "model_error" and "sha256 mismatch" in error["message"]
    assert (await served.send(sid, key, "read the phone again")).status_code == 202
    rest = await sse(served.client, f"/v1/sessions/{sid}/events", served.auth(key), until=kind("end"),
                     last_id=got[-1].id)
    assert rest[-1].data["stop_reason"] == "finish"


async def test_a_session_on_an_mcp_server_the_service_was_given(make_server) -> None:  # type: ignore[no-untyped-def]
    import sys
    from pathlib import Path

    from pocketpilot.serve import DeviceOpener

    fixture = Path(__file__).resolve().parents[1] / "executor" / "mcp_fixture_server.py"
    opener = DeviceOpener({"fixture": [sys.executable, str(fixture), "stdio"]})
    script = [{"kind": "tool_call", "calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
              {"kind": "tool_call", "calls": [{"name": "add_note", "arguments": {"text": "hi"}}]},
              {"kind": "finish", "summary": "done"}]
    async with make_server(devices=opener) as s:
        r = await s.client.post("/v1/sessions", json={"owner": "anna", "eta": "none",
                                                      "device": {"kind": "mcp", "server": "nope"}}, headers=s.auth())
        assert r.status_code == 422 and "fixture" in r.json()["error"]["message"]  # a name, never a command
        sid, key = await s.open(script, device={"kind": "mcp", "server": "fixture"})
        await s.send(sid, key, "add and note")
        # neither tool carries annotations: MCP's defaults make both destructive, so each asks
        got = await sse(s.client, f"/v1/sessions/{sid}/events", s.auth(key), until=question)
        assert got[-1].data["call"] == {"name": "add", "arguments": {"a": 2, "b": 3}}
        await s.client.post(f"/v1/sessions/{sid}/answers", json={"question_id": got[-1].data["id"], "answer": "allow"},
                            headers=s.auth(key))
        more = await sse(s.client, f"/v1/sessions/{sid}/events", s.auth(key), until=question, last_id=got[-1].id)
        assert next(e.data["step"] for e in more if e.event == "step")["results"][0]["data"] == {"result": 5}
        assert more[-1].data["call"]["name"] == "add_note"
        await s.client.post(f"/v1/sessions/{sid}/answers", json={"question_id": more[-1].data["id"], "answer": "deny"},
                            headers=s.auth(key))
        rest = await sse(s.client, f"/v1/sessions/{sid}/events", s.auth(key), until=kind("end"), last_id=more[-1].id)
        assert rest[-1].data["stop_reason"] == "denied"
        assert (await s.client.delete(f"/v1/sessions/{sid}", headers=s.auth(key))).status_code == 200


async def test_the_simulated_phone_must_be_running(make_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pocketpilot.serve import DeviceOpener

    async with make_server(devices=DeviceOpener(simphone_dir=tmp_path / "simphone")) as s:
        r = await s.client.post("/v1/sessions", json={"owner": "anna", "device": {"kind": "simphone"}},
                                headers=s.auth())
        assert r.status_code == 422 and "pocketpilot simphone start" in r.json()["error"]["message"]


def _executor_fixtures():  # noqa: ANN202 - the isolated adb server the executor tests start
    import importlib.util
    import sys
    from pathlib import Path

    name = "_executor_adb_fixtures"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[1] / "executor" / "conftest.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
async def test_sessions_on_the_running_simulated_phone_by_kind_and_by_serial(make_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`simphone` and `adb` devices on a simulated phone that runs (real adb protocol): a session's
    call changes the phone, a second session reaches the same phone by its serial, and the two
    queue on it as one device."""
    from pocketpilot.executor.simphone import simphone_status
    from pocketpilot.executor.simphone.launcher import start_simphone, stop_simphone
    from pocketpilot.serve import DeviceOpener

    fixtures = _executor_fixtures()
    adb = await asyncio.to_thread(fixtures.start_adb_server, tmp_path / "adb")
    state_dir = tmp_path / "simphone"
    try:
        info = await asyncio.to_thread(start_simphone, state_dir, port=fixtures.free_port(), backend="sandbox")
        assert simphone_status(state_dir) is not None
        set_it = [{"kind": "tool_call", "calls": [{"name": "set_brightness", "arguments": {"level": 40}}]},
                  {"kind": "finish", "summary": "set"}]
        read_it = [{"kind": "tool_call", "calls": [{"name": "get_settings", "arguments": {}}]},
                   {"kind": "finish", "summary": "read"}]
        async with make_server(devices=DeviceOpener(adb_port=adb.port, simphone_dir=state_dir)) as s:
            a_sid, a_key = await s.open(set_it, device={"kind": "simphone"})
            b_sid, b_key = await s.open(read_it, device={"kind": "adb", "serial": info.serial})
            sessions = s.app.state.registry._sessions
            assert sessions[a_sid].device.key == sessions[b_sid].device.key == f"adb:{info.serial}"  # one queue
            await s.send(a_sid, a_key, "set the brightness to 40")
            got = await sse(s.client, f"/v1/sessions/{a_sid}/events", s.auth(a_key), until=kind("end"), timeout=60)
            step = next(e.data["step"] for e in got if e.event == "step")
            assert step["results"][0]["ok"], step["results"][0]
            assert got[-1].data["stop_reason"] == "finish"
            await s.send(b_sid, b_key, "what is the brightness?")
            got = await sse(s.client, f"/v1/sessions/{b_sid}/events", s.auth(b_key), until=kind("end"), timeout=60)
            step = next(e.data["step"] for e in got if e.event == "step")
            assert step["results"][0]["ok"] and step["results"][0]["data"]["brightness"] == 40  # the same phone
            for sid, key in ((a_sid, a_key), (b_sid, b_key)):
                assert (await s.client.delete(f"/v1/sessions/{sid}", headers=s.auth(key))).status_code == 200
    finally:
        await asyncio.to_thread(stop_simphone, state_dir)
        await asyncio.to_thread(fixtures.stop_adb_server, adb)
