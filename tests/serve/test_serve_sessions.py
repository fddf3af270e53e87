"""`pocketpilot serve` end to end: the real app on uvicorn, a scripted planner, the sandbox phone."""

from __future__ import annotations

import asyncio
import json

from _serve_support import Event, Served, kind, question, sse

POWER_OFF = [{"kind": "tool_call", "calls": [{"name": "power_off", "arguments": {}}]},
             {"kind": "finish", "summary": "phone is off"}]
READ = [{"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]},
        {"kind": "finish", "summary": "read it"}]


def idle_after_end(e: Event) -> bool:
    """The run is over (its end record came before this state event)."""
    return e.event == "state" and e.data["state"] == "idle" and e.id > 2


def events_path(sid: str) -> str:
    return f"/v1/sessions/{sid}/events"


async def test_steps_stream_as_the_trace_records(served: Served) -> None:
    sid, key = await served.open(READ)
    r = await served.send(sid, key, "what phone is this?")
    assert r.status_code == 202 and r.json()["turn"] == 0
    got = await sse(served.client, events_path(sid), served.auth(key), until=idle_after_end)
    trace_kinds = [e.event for e in got if e.event in ("header", "step", "end")]
    assert trace_kinds == ["header", "step", "step", "end"]
    assert [e.id for e in got] == list(range(1, len(got) + 1))
    # the stream is the trace file, line for line
    status = (await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))).json()
    (episode,) = status["traces"]
    lines = (served.trace_dir / sid / f"{episode}.jsonl").read_text().splitlines()
    assert [e.raw for e in got if e.event in ("header", "step", "end")] == lines
    step = got[[e.event for e in got].index("step")].data["step"]
    assert step["action"]["calls"][0]["name"] == "get_device_info" and step["results"][0]["ok"]
    assert next(e.data for e in got if e.event == "end")["stop_reason"] == "finish"
    assert status["state"] == "idle" and status["last_stop"] == "finish"


async def test_deny_stops_the_run_and_leaves_the_phone_on(served: Served) -> None:
    sid, key = await served.open(POWER_OFF)
    await served.send(sid, key, "turn the phone off")
    got = await sse(served.client, events_path(sid), served.auth(key), until=question)
    q = got[-1].data
    assert q["kind"] == "confirm" and q["call"]["name"] == "power_off" and q["options"] == ["allow", "deny"]
    assert q["semantics"]["destructive"] is True
    assert served.phone(sid).state.device.powered_on  # paused before the call
    status = (await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))).json()
    assert [p["id"] for p in status["pending"]] == [q["id"]]
    r = await served.client.post(f"/v1/sessions/{sid}/answers", json={"question_id": q["id"], "answer": "deny"},
                                 headers=served.auth(key))
    assert r.status_code == 200, r.text
    rest = await sse(served.client, events_path(sid), served.auth(key), until=kind("end"), last_id=got[-1].id)
    end = rest[-1].data
    assert end["stop_reason"] == "denied"
    step = next(e.data["step"] for e in rest if e.event == "step")
    assert step["results"][0]["error"]["code"] == "confirmation_denied"
    assert served.phone(sid).state.device.powered_on
    assert any(e.event == "answer" and e.data == {"question_id": q["id"], "answer": "deny", "by": "client"} for e in rest)
    # answered once: a second answer finds nothing pending
    again = await served.client.post(f"/v1/sessions/{sid}/answers", json={"question_id": q["id"], "answer": "allow"},
                                     headers=served.auth(key))
    assert again.status_code == 409 and again.json()["error"]["code"] == "not_pending"
    assert served.phone(sid).state.device.powered_on


async def test_allow_runs_the_call(served: Served) -> None:
    sid, key = await served.open(POWER_OFF)
    await served.send(sid, key, "turn the phone off")
    got = await sse(served.client, events_path(sid), served.auth(key), until=question)
    await served.client.post(f"/v1/sessions/{sid}/answers", json={"question_id": got[-1].data["id"], "answer": "allow"},
                             headers=served.auth(key))
    rest = await sse(served.client, events_path(sid), served.auth(key), until=kind("end"), last_id=got[-1].id)
    assert rest[-1].data["stop_reason"] == "finish"
    assert not served.phone(sid).state.device.powered_on


async def test_unanswered_confirmation_is_denied_after_the_timeout(served: Served) -> None:
    sid, key = await served.open(POWER_OFF, confirm_timeout_s=0.3)
    await served.send(sid, key, "turn the phone off")
    got = await sse(served.client, events_path(sid), served.auth(key), until=kind("end"))
    q = next(e.data for e in got if e.event == "question")
    assert q["timeout_s"] == 0.3
    assert {"question_id": q["id"], "answer": "deny", "by": "timeout"} in [e.data for e in got if e.event == "answer"]
    end = got[-1].data
    assert end["stop_reason"] == "denied" and "no answer within 0.3s" in end["stop_detail"]
    assert served.phone(sid).state.device.powered_on
    late = await served.client.post(f"/v1/sessions/{sid}/answers", json={"question_id": q["id"], "answer": "allow"},
                                    headers=served.auth(key))
    assert late.status_code == 409
    assert served.phone(sid).state.device.powered_on


async def test_a_client_cannot_answer_or_watch_a_session_it_does_not_hold(served: Served) -> None:
    sid, key = await served.open(POWER_OFF)
    other_sid, other_key = await served.open(READ)
    await served.send(sid, key, "turn the phone off")
    got = await sse(served.client, events_path(sid), served.auth(key), until=question)
    qid = got[-1].data["id"]
    answer = {"question_id": qid, "answer": "allow"}
    for headers in (served.auth(other_key), served.auth(None), served.auth(key + "x")):
        r = await served.client.post(f"/v1/sessions/{sid}/answers", json=answer, headers=headers)
        assert r.status_code == 403 and r.json()["error"]["code"] == "not_holder"
    # its own session knows no such question
    r = await served.client.post(f"/v1/sessions/{other_sid}/answers", json=answer, headers=served.auth(other_key))
    assert r.status_code == 409
    for path in (events_path(sid), f"/v1/sessions/{sid}"):
        assert (await served.client.get(path, headers=served.auth(other_key))).status_code == 403
    assert (await served.client.delete(f"/v1/sessions/{sid}", headers=served.auth(other_key))).status_code == 403
    await asyncio.sleep(0.05)
    assert served.phone(sid).state.device.powered_on
    status = (await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))).json()
    assert status["state"] == "running" and [p["id"] for p in status["pending"]] == [qid]


async def test_reconnect_with_last_event_id_loses_nothing_and_repeats_nothing(served: Served) -> None:
    sid, key = await served.open([*READ[:1], *POWER_OFF])
    await served.send(sid, key, "read, then turn it off")
    first = await sse(served.client, events_path(sid), served.auth(key), until=question)  # hang up mid-run
    assert [e.event for e in first].count("step") == 1  # the read's step comes before the question after it
    await served.client.post(f"/v1/sessions/{sid}/answers", json={"question_id": first[-1].data["id"],
                                                                   "answer": "allow"}, headers=served.auth(key))
    # a second hang-up in between, right after the first event it gets
    second = await sse(served.client, events_path(sid), served.auth(key), until=lambda e: True, last_id=first[-1].id)
    third = await sse(served.client, events_path(sid), served.auth(key), until=kind("end"), last_id=second[-1].id)
    ids = [e.id for e in first + second + third]
    assert ids == list(range(1, ids[-1] + 1))  # every event, each once, in order
    whole = await sse(served.client, events_path(sid), served.auth(key), until=kind("end"))
    assert [(e.id, e.event, e.raw) for e in whole] == [(e.id, e.event, e.raw) for e in first + second + third]


async def test_auth_is_required(served: Served) -> None:
    sid, key = await served.open(READ)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic dGVzdA=="}):
        for method, path in (("POST", "/v1/sessions"), ("GET", f"/v1/sessions/{sid}"), ("GET", events_path(sid))):
            r = await served.client.request(method, path, headers={**headers, "X-Session-Key": key}, json={})
            assert r.status_code == 401, (method, path, headers)
            assert r.json()["error"]["code"] == "unauthorized" and r.headers["www-authenticate"] == "Bearer"
    assert (await served.client.get("/openapi.json")).status_code == 200  # the schema is public


async def test_bad_input_gets_typed_errors_and_loses_nothing(served: Served) -> None:
    sid, key = await served.open(POWER_OFF)
    auth = served.auth(key)

    async def post(path: str, content: bytes, headers: dict[str, str] = auth) -> tuple[int, str]:
        r = await served.client.post(path, content=content, headers={**headers, "Content-Type": "application/json"})
        body = r.json()
        assert set(body) == {"error"} and "\n" not in body["error"]["message"]
        return r.status_code, body["error"]["code"]

    req = f"/v1/sessions/{sid}/requests"
    assert await post(req, b"{not json") == (400, "malformed_json")
    assert await post(req, b"[1, 2]") == (400, "malformed_json")
    assert await post(req, b'{"request": ""}') == (422, "invalid_body")
    assert await post(req, b'{"request": "x", "extra": 1}') == (422, "invalid_body")
    assert await post(req, json.dumps({"request": "x" * 70_000}).encode()) == (413, "payload_too_large")
    assert await post("/v1/sessions/nope/requests", b'{"request": "x"}') == (404, "unknown_session")
    assert await post("/v1/sessions", b'{"owner": "bob", "device": {"kind": "floppy"}}', served.auth()) == \
        (422, "invalid_body")
    assert await post("/v1/sessions", b'{"owner": "bob", "device": {"kind": "sandbox", "apps": ["nope"]}}',
                      served.auth()) == (422, "invalid_request")
    assert await post("/v1/sessions", b'{"owner": "bob", "device": {"kind": "mcp", "server": "x"}}',
                      served.auth()) == (422, "invalid_request")
    assert await post(f"/v1/sessions/{sid}/answers", b'{"question_id": "q_nope", "answer": "allow"}') == \
        (409, "not_pending")
    r = await served.client.get(f"/v1/sessions/{sid}/nothing-here", headers=auth)
    assert r.status_code == 404 and r.json()["error"]["code"] == "no_route"
    # nothing was lost: the session still runs its request, and a second one is refused while it does
    assert (await served.send(sid, key, "turn it off")).status_code == 202
    busy = await served.send(sid, key, "again")
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "busy"
    got = await sse(served.client, events_path(sid), served.auth(key), until=question)
    status, code = await post(f"/v1/sessions/{sid}/answers", json.dumps({"question_id": got[-1].data["id"],
                                                                        "answer": "maybe"}).encode())
    assert (status, code) == (422, "invalid_body")
    assert [q["id"] for q in (await served.client.get(f"/v1/sessions/{sid}", headers=auth)).json()["pending"]] == \
        [got[-1].data["id"]]


async def test_cancel_ends_the_trace_as_cancelled(served: Served) -> None:
    sid, key = await served.open(POWER_OFF)
    await served.send(sid, key, "turn it off")
    got = await sse(served.client, events_path(sid), served.auth(key), until=question)
    r = await served.client.delete(f"/v1/sessions/{sid}/requests/current", headers=served.auth(key))
    assert r.json() == {"cancelled": True}
    rest = await sse(served.client, events_path(sid), served.auth(key),
                     until=lambda e: e.event == "state" and e.data["state"] == "idle", last_id=got[-1].id)
    end = next(e.data for e in rest if e.event == "end")
    assert end["stop_reason"] == "cancelled"
    assert {"question_id": got[-1].data["id"], "answer": "deny", "by": "cancelled"} in \
        [e.data for e in rest if e.event == "answer"]
    assert served.phone(sid).state.device.powered_on
    r = await served.client.delete(f"/v1/sessions/{sid}/requests/current", headers=served.auth(key))
    assert r.json() == {"cancelled": False}
    r = await served.client.delete(f"/v1/sessions/{sid}", headers=served.auth(key))
    assert r.status_code == 200
    assert (await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))).status_code == 404


async def test_ask_user_is_a_question_whose_answer_continues_the_conversation(served: Served) -> None:
    sid, key = await served.open([{"kind": "ask_user", "question": "Which Anna?"},
                                  {"kind": "finish", "summary": "called Anna Berg"}])
    await served.send(sid, key, "call Anna")
    got = await sse(served.client, events_path(sid), served.auth(key), until=question)
    q = got[-1].data
    assert q["kind"] == "ask_user" and q["text"] == "Which Anna?"
    assert (await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))).json()["state"] == "waiting"
    r = await served.client.post(f"/v1/sessions/{sid}/answers", json={"question_id": q["id"], "answer": "Anna Berg"},
                                 headers=served.auth(key))
    assert r.status_code == 200
    rest = await sse(served.client, events_path(sid), served.auth(key), until=kind("end"), last_id=got[-1].id)
    header = next(e.data["header"] for e in rest if e.event == "header")
    assert header["request"] == "Anna Berg" and header["turn"] == 1
    assert any("Which Anna?" in m["content"] for m in header["preamble"])  # the earlier turn is in view
    assert rest[-1].data["stop_reason"] == "finish"


async def test_sessions_on_two_devices_run_at_once(served: Served) -> None:
    a = await served.open(POWER_OFF)
    b = await served.open(POWER_OFF)
    for sid, key in (a, b):
        await served.send(sid, key, "turn it off")
    qa, qb = [(await sse(served.client, events_path(sid), served.auth(key), until=question))[-1]
              for sid, key in (a, b)]
    for (sid, key), q in ((a, qa), (b, qb)):  # both paused at once: neither waits for the other
        status = (await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))).json()
        assert status["state"] == "running" and status["pending"][0]["id"] == q.data["id"]
    await served.client.post(f"/v1/sessions/{b[0]}/answers", json={"question_id": qb.data["id"], "answer": "allow"},
                             headers=served.auth(b[1]))
    await sse(served.client, events_path(b[0]), served.auth(b[1]), until=kind("end"), last_id=qb.id)
    assert not served.phone(b[0]).state.device.powered_on and served.phone(a[0]).state.device.powered_on


async def test_openapi_describes_the_routes(served: Served) -> None:
    doc = (await served.client.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.1")
    assert {"/v1/sessions", "/v1/sessions/{sid}/events", "/v1/sessions/{sid}/answers",
            "/v1/sessions/{sid}/requests/current"} <= set(doc["paths"])
    create = doc["components"]["schemas"]["SessionCreate"]
    assert "owner" in create["required"] and "device" in create["properties"]


async def test_cors_is_off_unless_origins_are_listed(make_server) -> None:  # type: ignore[no-untyped-def]
    async with make_server() as s:
        r = await s.client.get("/openapi.json", headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in r.headers
    async with make_server(cors_origins=("http://app.local",)) as s:
        ok = await s.client.options("/v1/sessions", headers={"Origin": "http://app.local",
                                                              "Access-Control-Request-Method": "POST"})
        assert ok.headers["access-control-allow-origin"] == "http://app.local"
        bad = await s.client.options("/v1/sessions", headers={"Origin": "http://evil.example",
                                                               "Access-Control-Request-Method": "POST"})
        assert bad.headers.get("access-control-allow-origin") != "http://evil.example"


async def test_the_default_eta_runs_the_harness_kit(served: Served) -> None:
    sid, key = await served.open(READ, eta="default")
    await served.send(sid, key, "what phone is this?")
    got = await sse(served.client, events_path(sid), served.auth(key), until=kind("end"))
    header = next(e.data["header"] for e in got if e.event == "header")
    assert header["eta_version"] and header["policies"]
    assert got[-1].data["stop_reason"] == "finish"


async def test_a_model_the_store_does_not_know_is_the_clients_error(make_server) -> None:  # type: ignore[no-untyped-def]
    from pocketpilot.errors import UnknownModelError

    async with make_server() as s:
        def unknown(model: str) -> None:
            raise UnknownModelError(model, ["default"])

        s.app.state.registry._planners = unknown
        r = await s.client.post("/v1/sessions", json={"owner": "anna", "model": "gpt-17"}, headers=s.auth())
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_model" and "gpt-17" in r.text
        assert len(s.app.state.registry) == 0


async def test_sessions_run_under_the_eta_the_operator_gave(make_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pocketpilot.adapters import compile_eta, load_eta, sandbox_tool_apps, save_eta
    from pocketpilot.evaluation.task_episode import HarnessKit
    from pocketpilot.skills import SkillLibrary

    library = SkillLibrary.builtin()
    tools, apps = sandbox_tool_apps()
    eta = compile_eta(tools, library, apps=apps, strict=True)
    kit = HarnessKit(library, eta=load_eta(save_eta(eta, tmp_path / "eta.json")))
    async with make_server(kit=kit) as s:
        sid, key = await s.open(READ, eta="default")
        await s.send(sid, key, "what phone is this?")
        got = await sse(s.client, events_path(sid), s.auth(key), until=kind("end"))
        assert next(e.data["header"] for e in got if e.event == "header")["eta_version"] == eta.version


async def test_a_sub_agent_asks_the_same_client_and_its_denial_stops_the_run(served: Served) -> None:
    sid, key = await served.open([
        {"kind": "delegate", "instruction": "power the phone off", "tools": ["power_off"]},
        {"kind": "tool_call", "calls": [{"name": "power_off", "arguments": {}}]},  # the sub-agent's step
        {"kind": "finish", "summary": "done"},
        {"kind": "finish", "summary": "done"},
    ])
    await served.send(sid, key, "hand the power-off to a helper")
    got = await sse(served.client, events_path(sid), served.auth(key), until=question)
    assert got[-1].data["call"]["name"] == "power_off"
    await served.client.post(f"/v1/sessions/{sid}/answers", json={"question_id": got[-1].data["id"], "answer": "deny"},
                             headers=served.auth(key))
    rest = await sse(served.client, events_path(sid), served.auth(key), until=kind("end"), last_id=got[-1].id)
    assert rest[-1].data["stop_reason"] == "denied"
    assert served.phone(sid).state.device.powered_on
