"""What a long-lived service keeps: a session's events in memory are capped (older trace lines are
read back from the trace), and sessions nobody uses expire, their runs ended cleanly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from _serve_support import Served, kind, question, sse

from pocketpilot.serve.events import EventLog, ServeEvent, TraceLine

READS = [{"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]}] * 6 + [
    {"kind": "finish", "summary": "read it"}]
POWER_OFF = [{"kind": "tool_call", "calls": [{"name": "power_off", "arguments": {}}]},
             {"kind": "finish", "summary": "phone is off"}]


async def test_the_log_keeps_its_window_and_reads_older_trace_lines_back(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    lines = [json.dumps({"type": "step", "n": i, "pad": "x" * 50}) for i in range(5)]
    trace.write_text("".join(line + "\n" for line in lines))
    log = EventLog(max_in_memory=3)
    offset = 0
    for i, line in enumerate(lines):
        log.append("state", {"state": f"s{i}"})  # a service event: kept whole past the window
        log.append("step", line, source=(trace, offset, len(line)))
        offset += len(line) + 1
    log.close()
    assert log.last_id == 10 and log.in_memory == 3
    assert all(isinstance(e, ServeEvent | TraceLine) for e in log._older)
    assert sum(isinstance(e, TraceLine) for e in log._older) == 3  # the older steps are kept as places
    got = [e async for e in log.follow(0) if e is not None]
    assert [e.id for e in got] == list(range(1, 11))
    assert [e.data for e in got if e.event == "step"] == lines  # byte for byte, from the trace
    assert [json.loads(e.data)["state"] for e in got if e.event == "state"] == [f"s{i}" for i in range(5)]
    tail = [e async for e in log.follow(7) if e is not None]
    assert [e.id for e in tail] == [8, 9, 10]
    # a trace that lost the line: the client is told where the gap is, not handed something else
    trace.write_text("")
    gap = await log.get(2)
    assert gap.id == 2 and gap.event == "gap" and json.loads(gap.data)["event"] == "step"


async def test_a_reconnect_from_before_the_window_gets_every_event_once(make_server) -> None:  # noqa: ANN001
    async with make_server(events_in_memory=4) as served:
        sid, key = await served.open(READS, max_steps=10)
        await served.send(sid, key, "read the phone again and again")
        live = await sse(served.client, f"/v1/sessions/{sid}/events", served.auth(key), until=kind("end"))
        log = served.app.state.registry._sessions[sid].log
        assert log.in_memory <= 4 and log.last_id > 8
        again = await sse(served.client, f"/v1/sessions/{sid}/events", served.auth(key), until=kind("end"))
        assert [(e.id, e.event, e.raw) for e in again] == [(e.id, e.event, e.raw) for e in live]
        status = (await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))).json()
        (episode,) = status["traces"]
        lines = (served.trace_dir / sid / f"{episode}.jsonl").read_text().splitlines()
        assert [e.raw for e in again if e.event in ("header", "step", "end")] == lines


async def _wait_gone(served: Served, sid: str, key: str, within: float = 15.0) -> dict:
    """Wait (without calling about it: a call is activity) until the session is gone; then its 404."""
    session = served.app.state.registry._sessions[sid]
    async with asyncio.timeout(within):
        while sid in served.app.state.registry._sessions or not session.log.closed:  # closed: its run ended
            await asyncio.sleep(0.05)
    r = await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))
    assert r.status_code == 404
    return r.json()


async def test_an_idle_session_expires_and_its_waiting_run_ends_cancelled(make_server) -> None:  # noqa: ANN001
    async with make_server(idle_timeout_s=2.0) as served:
        sid, key = await served.open(POWER_OFF)
        await served.send(sid, key, "turn the phone off")
        got = await sse(served.client, f"/v1/sessions/{sid}/events", served.auth(key), until=question)
        session = served.app.state.registry._sessions[sid]
        trace_dir = session.trace_dir
        phone = session.device.state
        # a busy session is not idle: one that polls stays
        for _ in range(8):
            await asyncio.sleep(0.4)
            assert (await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))).status_code == 200
        gone = await _wait_gone(served, sid, key)
        assert gone["error"]["code"] == "unknown_session"
        assert served.app.state.registry.expired == 1
        # its run ended cleanly: the trace says cancelled, the destructive call never ran
        (trace,) = trace_dir.glob("*.jsonl")
        records = [json.loads(line) for line in trace.read_text().splitlines()]
        assert records[-1]["type"] == "end" and records[-1]["stop_reason"] == "cancelled"
        assert phone.state.device.powered_on
        assert got[-1].data["kind"] == "confirm"
        names = [e.event for e in session.log._window]
        assert "expired" in names and names[-1] == "state" and session.log._window[-1].data == '{"state": "closed"}'
        assert names.index("expired") < names.index("end")  # said before the run was ended


async def test_a_session_with_a_stream_open_does_not_expire(make_server) -> None:  # noqa: ANN001
    async with make_server(idle_timeout_s=1.5) as served:
        sid, key = await served.open(POWER_OFF)
        other, other_key = await served.open(POWER_OFF)
        reader = asyncio.create_task(sse(served.client, f"/v1/sessions/{sid}/events", served.auth(key),
                                         until=kind("never"), timeout=4.0))
        await _wait_gone(served, other, other_key)  # the one nobody watches goes
        assert (await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))).status_code == 200
        assert served.app.state.registry._sessions[sid].log.readers == 1
        await asyncio.gather(reader, return_exceptions=True)  # the reader gives up at its timeout
        await _wait_gone(served, sid, key)
