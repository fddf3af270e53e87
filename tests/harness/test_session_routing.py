"""Session features a harness uses per request: offered actions, preloaded skills, evidence,
guidance re-filtered after load_skill, and the exact next call after a gate held a call back."""

from __future__ import annotations

import json

import pytest
from scripted_actions import batch, call

from pocketpilot.errors import UsageError
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, HarnessConfig, Session, default_policies, safety_policies
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.policies import HeldCalls, LoopGuard
from pocketpilot.skills import DependsOnResultGate, SkillLibrary

FINISH = {"kind": "finish", "summary": "done"}
CAST = ["get_cast_status", "start_cast", "stop_cast"]


NO_SEQUENCING = [HeldCalls(sequence=False) if p.name == "held_calls" else p for p in default_policies()]
"""The default set with held calls sent back to the planner rather than run by the harness."""


def _session(planner, phone, names, **kw) -> Session:
    return Session(planner, SandboxExecutor(phone), tools=names, confirm=AllowAll(), **kw)


@pytest.fixture(scope="module")
def lib():
    return SkillLibrary.builtin()


async def test_held_call_comes_back_as_the_exact_next_action(lib):
    phone = SandboxPhone()
    phone.state.cast.active, phone.state.cast.target = True, "Office Display"
    start = {"name": "start_cast", "arguments": {"target": "Living Room TV"}}
    planner = ScriptedPlanner(
        [batch(("get_cast_status", {}), ("stop_cast", {}), ("start_cast", start["arguments"])), FINISH]
    )
    episode = await _session(planner, phone, CAST, skills=lib, gates=lib.always_on_gates(CAST)).run(
        "switch the cast"
    )
    first = episode.steps[0]
    assert [r.ok for r in first.results] == [True, True, False]
    assert first.results[2].error.code == "precondition_failed"
    held = [n for n in first.notices if n.startswith("Not run yet")]
    assert len(held) == 1 and "start_cast" in held[0]
    assert "get_cast_status, stop_cast" in held[0]  # names the results to decide from
    # the exact call, written as a call (not a JSON action a planner could paste into a refusal)
    assert 'call start_cast(target="Living Room TV") next' in held[0] and "{" not in held[0]
    suggested = {"kind": "tool_call", "calls": [start]}
    # the planner sees the notice in the feedback of that step
    feedback = json.loads(planner.requests[1].messages[-1].content)
    assert any(n.startswith("Not run yet") for n in feedback["notices"])
    # and the suggested action passes the gates now
    phone2 = SandboxPhone()
    phone2.state.cast.active, phone2.state.cast.target = True, "Office Display"
    planner2 = ScriptedPlanner(
        [
            batch(("get_cast_status", {}), ("stop_cast", {}), ("start_cast", start["arguments"])),
            suggested,
            FINISH,
        ]
    )
    ep2 = await _session(planner2, phone2, CAST, skills=lib, gates=lib.always_on_gates(CAST)).run(
        "switch the cast"
    )
    assert ep2.steps[1].results[0].ok and phone2.state.cast.target == "Living Room TV"


async def test_held_calls_are_suggested_one_at_a_time_in_the_planners_order(lib):
    names = ["get_device_info", "get_settings", "set_do_not_disturb", "set_brightness"]
    planner = ScriptedPlanner(
        [
            batch(
                ("get_device_info", {}),
                ("set_do_not_disturb", {"enabled": True}),
                ("set_brightness", {"level": 10}),
            ),
            FINISH,
        ]
    )
    episode = await _session(
        planner,
        SandboxPhone(),
        names,
        gates=[
            DependsOnResultGate(
                tools=frozenset({"set_do_not_disturb", "set_brightness"}),
                skill="t",
                waits_for=frozenset({"get_device_info"}),
            )
        ],
    ).run("if low: dnd, dim")
    assert [r.ok for r in episode.steps[0].results] == [True, False, False]  # the writes waited for the read
    (held,) = [n for n in episode.steps[0].notices if n.startswith("Not run yet")]
    assert "call set_do_not_disturb(enabled=true) next" in held
    assert "then set_brightness in later steps" in held and "leave them out" in held


async def test_a_held_call_that_would_still_fail_is_not_suggested(lib):
    names = ["list_notes", "read_note", "create_note", "search_notes", "delete_note"]
    planner = ScriptedPlanner([batch(("list_notes", {}), ("read_note", {"note_id": "note-99"})), FINISH])
    episode = await _session(planner, SandboxPhone(), names, gates=lib.always_on_gates(names)).run(
        "read note 99"
    )
    notices = episode.steps[0].notices
    assert not any(n.startswith("Not run yet") for n in notices)
    assert any(n.startswith("Not run: read_note") for n in notices)


async def test_offered_actions_narrow_the_kinds_for_parent_and_sub_agent():
    names = ["get_settings", "set_wifi"]
    planner = ScriptedPlanner([{"kind": "delegate", "instruction": "read the settings"}, FINISH, FINISH])
    session = _session(planner, SandboxPhone(), names, actions=["tool_call", "delegate", "finish"])
    episode = await session.run("check settings")
    assert planner.requests[0].kinds == ("tool_call", "delegate", "finish")
    assert planner.requests[1].kinds == ("tool_call", "finish")  # the sub-agent: no delegate at depth 1
    assert episode.steps[0].children
    with pytest.raises(UsageError, match="unknown action kinds"):
        await _session(ScriptedPlanner([FINISH]), SandboxPhone(), names, actions=["fly"]).run("x")
    with pytest.raises(UsageError, match="no action kind"):
        await _session(ScriptedPlanner([FINISH]), SandboxPhone(), names, actions=[]).run("x")


async def test_preloaded_skill_guides_from_the_first_step_without_its_loaded_gates(lib):
    names = ["create_note", "power_off"]
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [{"kind": "load_skill", "name": "note-before-power-off"}, call("power_off"), FINISH]
    )
    session = _session(
        planner,
        phone,
        names,
        skills=lib,
        gates=lib.always_on_gates(names),
        preloaded=["note-before-power-off"],
    )
    episode = await session.run("power off")
    first = planner.requests[0]
    assert "[note-before-power-off]" in first.messages[0].content
    assert "note-before-power-off" not in first.skills  # already in force: not loadable again
    assert "read_note" in {t.name for t in first.tools}  # the skill's tools are exposed
    assert episode.header.skills == ["note-before-power-off"]
    assert episode.steps[0].results[0].error.code == "unknown_skill"
    # its `when: loaded` gate (power off needs a saved note) is not applied: a routing guess
    # must not make a plain power off impossible
    assert episode.steps[1].results[0].ok and not phone.state.device.powered_on
    with pytest.raises(UsageError, match="skill store"):
        _session(ScriptedPlanner([FINISH]), SandboxPhone(), names, preloaded=["notes"])


async def test_guidance_is_refiltered_when_load_skill_exposes_tools(lib):
    seen: list[list[str]] = []

    def guidance_for(tools):
        seen.append(sorted(tools))
        return [f"GUIDE for {len(tools)} tools"] + (["about read_note"] if "read_note" in tools else [])

    planner = ScriptedPlanner([{"kind": "load_skill", "name": "notes"}, FINISH])
    session = _session(planner, SandboxPhone(), ["create_note"], skills=lib, guidance_for=guidance_for)
    await session.run("save a note")
    assert seen[0] == ["create_note"] and "read_note" in seen[-1]
    assert "about read_note" not in planner.requests[0].messages[0].content
    assert "about read_note" in planner.requests[1].messages[0].content
    assert "[notes]" in planner.requests[1].messages[0].content  # the loaded procedure too


async def test_evidence_sits_between_prefix_and_request_and_stays_with_the_parent():
    planner = ScriptedPlanner([{"kind": "delegate", "instruction": "turn wifi off"}, FINISH, FINISH])
    session = _session(
        planner,
        SandboxPhone(),
        ["get_settings", "set_wifi"],
        evidence=["Recalled memories: - (2025-03-01) I like wifi off."],
    )
    await session.run("do my usual wifi thing")
    parent = planner.requests[0].messages
    assert [m.section for m in parent] == ["prefix", "evidence", "request"]
    assert "I like wifi off" in parent[1].content and parent[1].role == "user"
    child = planner.requests[1].messages
    assert not any("I like wifi off" in m.content for m in child)
    assert planner.requests[2].messages[1].section == "evidence"  # kept on every parent step


async def test_a_resolved_phone_number_comes_back_as_an_artifact():
    names = ["lookup_contact", "send_sms"]
    planner = ScriptedPlanner(
        [
            {"kind": "delegate", "instruction": "find Jordan's number", "tools": ["lookup_contact"]},
            {"kind": "tool_call", "calls": [{"name": "lookup_contact", "arguments": {"name": "Jordan"}}]},
            {"kind": "finish", "summary": "found"},
            FINISH,
        ]
    )
    episode = await _session(planner, SandboxPhone(), names).run("have a helper find Jordan's number")
    artifacts = episode.steps[0].results[0].data["artifacts"]
    assert artifacts["lookup_contact.phone"].startswith("+1-555") and "lookup_contact.id" in artifacts


async def test_repeating_a_batch_that_already_succeeded_is_pointed_out():
    names = ["get_settings", "set_wifi"]
    off = call("set_wifi", enabled=False)
    planner = ScriptedPlanner([off, call("get_settings"), off, FINISH])
    guarded = HarnessConfig()
    episode = await _session(planner, SandboxPhone(), names, config=guarded).run("wifi off")
    assert not any("already ran" in n for n in episode.steps[0].notices + episode.steps[1].notices)
    assert any(n.startswith("Step 1 already ran exactly these calls") for n in episode.steps[2].notices)
    # off by default: a plain session loop says nothing
    plain = await _session(ScriptedPlanner([off, off, FINISH]), SandboxPhone(), names).run("wifi off")
    assert not any("already ran" in n for s in plain.steps for n in s.notices)


async def test_a_sub_agent_gate_counts_what_the_parent_already_did(lib):
    phone = SandboxPhone()
    phone.state.cast.active, phone.state.cast.target = True, "Office Display"
    planner = ScriptedPlanner(
        [
            call("stop_cast"),
            {"kind": "delegate", "instruction": "cast to the living room TV", "tools": ["start_cast"]},
            call("start_cast", target="Living Room TV"),
            {"kind": "finish", "summary": "casting"},
            FINISH,
        ]
    )
    session = _session(planner, phone, CAST, skills=lib, gates=lib.always_on_gates(CAST))
    episode = await session.run("switch the cast to the living room TV")
    child = episode.steps[1].children[0]
    assert child.steps[0].results[0].ok  # the parent's stop_cast is evidence for the child's gate
    assert phone.state.cast.target == "Living Room TV"
    # without the parent's stop, the child's gate still blocks
    phone2 = SandboxPhone()
    phone2.state.cast.active, phone2.state.cast.target = True, "Office Display"
    planner2 = ScriptedPlanner(
        [
            {"kind": "delegate", "instruction": "cast to the living room TV", "tools": ["start_cast"]},
            call("start_cast", target="Living Room TV"),
            {"kind": "finish", "summary": "casting"},
            FINISH,
        ]
    )
    ep2 = await _session(planner2, phone2, CAST, skills=lib, gates=lib.always_on_gates(CAST)).run("cast")
    assert ep2.steps[0].children[0].steps[0].results[0].error.code == "precondition_failed"


async def test_no_skill_is_listed_as_loadable_when_load_skill_is_not_offered(lib):
    names = ["get_settings", "set_wifi"]
    offered = ScriptedPlanner([FINISH])
    await _session(offered, SandboxPhone(), names, skills=lib).run("wifi off")
    assert offered.requests[0].skills and "Skills you can load" in offered.requests[0].messages[0].content
    narrowed = ScriptedPlanner([FINISH])
    await _session(narrowed, SandboxPhone(), names, skills=lib, actions=["tool_call", "finish"]).run(
        "wifi off"
    )
    assert narrowed.requests[0].skills == []
    assert "Skills you can load" not in narrowed.requests[0].messages[0].content


async def test_a_guessed_id_next_to_the_creating_call_is_repaired_in_the_hint(lib):
    names = ["list_alarms", "create_alarm", "set_alarm_enabled"]
    planner = ScriptedPlanner(
        [
            batch(
                ("create_alarm", {"time": "05:40", "label": "Flight"}),
                ("set_alarm_enabled", {"alarm_id": "12345", "enabled": False}),
            ),
            FINISH,
        ]
    )
    episode = await _session(planner, SandboxPhone(), names, gates=lib.always_on_gates(names)).run(
        "alarm, off"
    )
    (held,) = [n for n in episode.steps[0].notices if n.startswith("Not run yet")]
    assert 'call set_alarm_enabled(alarm_id="alarm-3", enabled=false) next' in held


async def test_a_refusal_right_after_a_hold_is_sent_back_once(lib):
    phone = SandboxPhone()
    start = ("start_cast", {"target": "Office Display"})
    refuse = {"kind": "refuse", "reason": "The request still needs the result of get_cast_status"}
    planner = ScriptedPlanner([batch(("get_cast_status", {}), start), refuse, call(*start[:1], **start[1]), FINISH])
    config = HarnessConfig()
    episode = await _session(planner, phone, CAST, gates=lib.always_on_gates(CAST), config=config,
                             policies=NO_SEQUENCING).run("cast to office")
    sent_back = episode.steps[1].results[0]
    assert sent_back.error.code == "not_allowed" and 'start_cast(target="Office Display")' in sent_back.error.message
    assert episode.stop_reason == "finish" and phone.state.cast.target == "Office Display"
    # once only: a second refusal after another hold stops the run as a refusal
    planner2 = ScriptedPlanner([batch(("get_cast_status", {}), start), refuse, batch(("get_cast_status", {}), start), refuse])
    ep2 = await _session(planner2, SandboxPhone(), CAST, gates=lib.always_on_gates(CAST), config=config,
                         policies=NO_SEQUENCING).run("cast")
    assert ep2.stop_reason == "refuse" and len(ep2.steps) == 4
    # with the safety policies only (bare mode) the refusal stands
    planner3 = ScriptedPlanner([batch(("get_cast_status", {}), start), refuse])
    ep3 = await _session(planner3, SandboxPhone(), CAST, gates=lib.always_on_gates(CAST),
                         policies=safety_policies()).run("cast")
    assert ep3.stop_reason == "refuse" and len(ep3.steps) == 2


async def test_an_id_passed_where_a_name_belongs_gets_the_records_name():
    names = ["lookup_contact", "send_sms"]
    planner = ScriptedPlanner([batch(("lookup_contact", {"name": "Sam"})), call("send_sms", to="c7", body="hi"), FINISH])
    episode = await _session(planner, SandboxPhone(), names, config=HarnessConfig()).run("text Sam")
    failed = episode.steps[1]
    assert failed.results[0].error.code == "not_found"
    (hint,) = [n for n in failed.notices if n.startswith("'c7' is the id of")]
    assert "'Sam Taylor'" in hint and 'send_sms(to="Sam Taylor", body="hi")' in hint
    # a not_found whose argument is no known id gets no such hint
    planner2 = ScriptedPlanner([call("send_sms", to="c99", body="hi"), FINISH])
    ep2 = await _session(planner2, SandboxPhone(), names, config=HarnessConfig()).run("text")
    assert not any("is the id of" in n for n in ep2.steps[0].notices)



async def test_the_same_id_call_sent_again_after_the_hint_runs_with_the_name():
    names = ["lookup_contact", "send_sms"]
    lookup, send = batch(("lookup_contact", {"name": "Sam"})), call("send_sms", to="c7", body="hi")
    script = [lookup, send, lookup, send, FINISH]
    phone = SandboxPhone()
    episode = await _session(ScriptedPlanner(list(script)), phone, names,
                             config=HarnessConfig()).run("text Sam")
    assert episode.steps[1].results[0].error.code == "not_found"
    again = episode.steps[3]
    assert again.results[0].ok
    assert again.action.calls[0].arguments == {"to": "Sam Taylor", "body": "hi"}  # the step records what ran
    assert any("the harness ran" in n and 'to="Sam Taylor"' in n for n in again.notices)
    (sent,) = phone.state.messages.sent
    assert sent.body == "hi" and sent.contact in ("c7", "Sam Taylor")
    # without the policy the planner's call runs as written, and fails again
    phone2 = SandboxPhone()
    ep2 = await _session(ScriptedPlanner(list(script)), phone2, names, policies=safety_policies()).run("text Sam")
    assert ep2.steps[3].results[0].error.code == "not_found" and not phone2.state.messages.sent

async def test_the_loop_guard_makes_the_planner_conclude_after_a_consecutive_repeat():
    names = ["get_settings", "set_wifi"]
    read = call("get_settings")
    planner = ScriptedPlanner([read, read, FINISH])
    episode = await _session(planner, SandboxPhone(), names, config=HarnessConfig()).run(
        "settings?"
    )
    assert "tool_call" in planner.requests[1].kinds and "tool_call" not in planner.requests[2].kinds
    assert any(n.startswith("You just ran exactly these calls") for n in episode.steps[1].notices)
    assert episode.stop_reason == "finish"


async def test_the_loop_guard_stops_an_identical_held_batch_livelock(lib):
    phone = SandboxPhone()
    phone.state.cast.active, phone.state.cast.target = True, "Office Display"
    again = batch(("stop_cast", {}), ("start_cast", {"target": "Bedroom TV"}))
    planner = ScriptedPlanner([again, again, FINISH])
    session = _session(
        planner,
        phone,
        CAST,
        skills=lib,
        gates=lib.always_on_gates(CAST),
        policies=[LoopGuard()],
    )
    episode = await session.run("cast to the bedroom")
    # start_cast, which the request names, has not run: the guard says so and forces nothing
    assert "tool_call" in planner.requests[2].kinds
    (notice,) = [n for n in episode.steps[1].notices if "held back again" in n]
    assert "Not done yet" in notice and "start_cast" in notice
    # a livelock on a batch the request does not name (nothing left undone) must conclude
    phone2 = SandboxPhone()
    phone2.state.cast.active, phone2.state.cast.target = True, "Office Display"
    planner2 = ScriptedPlanner([again, again, FINISH])
    session2 = _session(planner2, phone2, CAST, skills=lib, gates=lib.always_on_gates(CAST), policies=[LoopGuard()])
    ep2 = await session2.run("what now?")
    assert "tool_call" not in planner2.requests[2].kinds
    assert "refuse" in planner2.requests[2].kinds  # held, not worked: refusing stays open
    assert any("held back again" in n and "must be finish" in n for n in ep2.steps[1].notices)


async def test_the_loop_guard_stops_an_identical_repeated_delegation():
    names = ["get_settings", "set_wifi"]
    hand_off = {"kind": "delegate", "instruction": "read the settings", "tools": ["get_settings"]}
    planner = ScriptedPlanner([hand_off, FINISH, hand_off, FINISH, FINISH])
    session = _session(planner, SandboxPhone(), names, config=HarnessConfig())
    episode = await session.run("settings?")
    assert "tool_call" in planner.requests[2].kinds  # the first repeat is still planned freely
    assert "delegate" not in planner.requests[4].kinds and "tool_call" not in planner.requests[4].kinds
    assert any("delegated exactly this before" in n for n in episode.steps[1].notices)


async def test_the_loop_guard_takes_memory_search_away_after_a_repeated_search(tmp_path):
    from pocketpilot.memory import AccessPolicy, Caller, SqliteMemory
    from pocketpilot.memory.bound import BoundMemory

    policy = AccessPolicy("service-token-0123456789", "admin-credential-9876543210")
    caller = Caller.service("service-token-0123456789", acting_for="alice")
    store = SqliteMemory(tmp_path / "m.db", policy)
    try:
        memory = BoundMemory(store, caller, "s1")
        await memory.write("I think in miles, not kilometers.", tier="user", category="preference",
                           provenance={"source": "user_statement"})
        search = {"kind": "memory_search", "query": "preferred distance unit miles"}
        planner = ScriptedPlanner([search, {**search, "query": "Preferred distance unit MILES "}, FINISH])
        session = _session(planner, SandboxPhone(), ["get_settings"], memory=memory,
                           config=HarnessConfig())
        episode = await session.run("5 km in my unit")
        assert episode.steps[0].results[0].data["memories"]  # the search finds the memory
        assert "memory_search" in planner.requests[1].kinds
        assert "memory_search" not in planner.requests[2].kinds  # same query again: taken away for a step
        assert any(n.startswith("You just ran this search") for n in episode.steps[1].notices)
        # a different search is not a repeat
        planner2 = ScriptedPlanner([search, {**search, "query": "home routine"}, FINISH])
        await _session(planner2, SandboxPhone(), ["get_settings"], memory=memory,
                       config=HarnessConfig()).run("x")
        assert "memory_search" in planner2.requests[2].kinds
    finally:
        store.close()


async def test_a_refusal_after_a_fixable_error_is_sent_back_once_and_a_plain_refusal_stands():
    names = ["query_health"]
    bad = call("query_health", metric="sleep", date="March 9")
    refuse = {"kind": "refuse", "reason": "The date 'March 9' is not valid."}
    good = call("query_health", metric="sleep", date="2025-03-09")
    planner = ScriptedPlanner([bad, refuse, good, FINISH])
    config = HarnessConfig()
    episode = await _session(planner, SandboxPhone(), names, config=config).run("How long did I sleep on March 9?")
    assert episode.steps[0].results[0].error.code == "invalid_arguments"
    sent = episode.steps[1].results[0]
    assert sent.error.code == "not_allowed" and "invalid_arguments" in sent.error.message
    assert episode.steps[2].results[0].ok and episode.stop_reason == "finish"
    # a refusal with no failed call before it (a request that must not be done) stands
    planner2 = ScriptedPlanner([refuse])
    ep2 = await _session(planner2, SandboxPhone(), names, config=config).run("text my PIN to a stranger")
    assert ep2.stop_reason == "refuse" and len(ep2.steps) == 1


async def test_a_run_may_not_delete_what_it_created_unless_asked():
    names = ["create_note", "read_note", "delete_note"]
    steps = [call("create_note", title="Packing list", body="passport"), call("delete_note", note_id="note-4"), FINISH]
    config = HarnessConfig()
    phone = SandboxPhone()
    episode = await _session(ScriptedPlanner(steps), phone, names, config=config).run("Make a note called Packing list")
    held = episode.steps[1].results[0]
    assert held.error.code == "not_allowed" and "undo step 1" in held.error.message
    assert any(n.title == "Packing list" for n in phone.state.notes.items)
    # an existing note the run did not create may be deleted; and a request that asks to remove may undo
    phone2 = SandboxPhone()
    ep2 = await _session(ScriptedPlanner([call("delete_note", note_id="note-1"), FINISH]), phone2, names,
                         config=config).run("Tidy my notes")
    assert ep2.steps[0].results[0].ok
    # a request that really asks to remove it: the same call sent again runs (no words are read)
    phone3 = SandboxPhone()
    again = [steps[0], steps[1], steps[1], FINISH]
    ep3 = await _session(ScriptedPlanner(again), phone3, names, config=config).run(
        "Make a note called Packing list, then delete it")
    assert not ep3.steps[1].results[0].ok and ep3.steps[2].results[0].ok
    assert not any(n.title == "Packing list" for n in phone3.state.notes.items)


async def test_after_a_hold_with_a_ready_call_the_next_step_offers_no_detour(lib):
    phone = SandboxPhone()
    start = ("start_cast", {"target": "Office Display"})
    planner = ScriptedPlanner([batch(("get_cast_status", {}), start), call(*start[:1], **start[1]), FINISH])
    await _session(planner, phone, CAST, skills=lib, gates=lib.always_on_gates(CAST),
                   policies=NO_SEQUENCING).run("cast to office")
    assert "load_skill" in planner.requests[0].kinds
    assert "load_skill" not in planner.requests[1].kinds and "tool_call" in planner.requests[1].kinds
    assert "load_skill" in planner.requests[2].kinds  # one step only
    assert phone.state.cast.target == "Office Display"


async def test_an_objectively_held_call_runs_after_its_batch_as_a_harness_step(lib):
    from pocketpilot.skills import audit_episode

    phone = SandboxPhone()
    start = ("start_cast", {"target": "Office Display"})
    planner = ScriptedPlanner([batch(("get_cast_status", {}), start), FINISH])
    config = HarnessConfig()
    episode = await _session(planner, phone, CAST, skills=lib, gates=lib.always_on_gates(CAST), config=config).run(
        "cast to office")
    first, second = episode.steps[0], episode.steps[1]
    assert first.results[1].error.code == "precondition_failed"  # not run inside the batch
    assert second.planner is None and [c.name for c in second.action.calls] == ["start_cast"]
    assert second.results[0].ok and phone.state.cast.target == "Office Display"
    assert [s.index for s in episode.steps] == [0, 1, 2] and episode.stop_reason == "finish"
    assert len(planner.requests) == 2  # the harness step cost no planner turn
    assert audit_episode(episode, lib) == []  # it ran after its prerequisite's result: no violation
    # a cast that is live: the start stays held (the gate still blocks it), the planner decides
    phone2 = SandboxPhone()
    phone2.state.cast.active, phone2.state.cast.target = True, "Bedroom TV"
    planner2 = ScriptedPlanner([batch(("get_cast_status", {}), start), FINISH])
    ep2 = await _session(planner2, phone2, CAST, skills=lib, gates=lib.always_on_gates(CAST), config=config).run("cast")
    assert len(ep2.steps) == 2 and ep2.steps[1].action.kind == "finish" and phone2.state.cast.target == "Bedroom TV"


async def test_a_decision_that_needs_the_result_is_not_sequenced():
    names = ["get_device_info", "set_do_not_disturb"]
    gate = DependsOnResultGate(tools=frozenset({"set_do_not_disturb"}), skill="t", waits_for=frozenset({"get_device_info"}))
    planner = ScriptedPlanner([batch(("get_device_info", {}), ("set_do_not_disturb", {"enabled": True})), FINISH])
    phone = SandboxPhone()
    episode = await _session(planner, phone, names, gates=[gate],
                             config=HarnessConfig()).run("if low, dnd")
    assert len(episode.steps) == 2 and episode.steps[1].action.kind == "finish"
    assert phone.state.settings.do_not_disturb is False



async def test_a_lookup_of_the_name_the_held_send_passes_settles_the_hold(lib):
    from pocketpilot.skills import audit_episode

    names = ["lookup_contact", "send_sms"]
    config = HarnessConfig()
    gates = lib.always_on_gates(names)
    send = ("send_sms", {"to": "Sam", "body": "battery dying"})
    phone = SandboxPhone()
    planner = ScriptedPlanner([batch(("lookup_contact", {"name": "Sam"}), send), FINISH])
    episode = await _session(planner, phone, names, skills=lib, gates=gates, config=config).run("text Sam")
    first, second = episode.steps[0], episode.steps[1]
    assert first.results[1].error.code == "precondition_failed"
    assert second.planner is None and second.results[0].ok and len(phone.state.messages.sent) == 1
    assert audit_episode(episode, lib) == []
    # a lookup of someone else says nothing about "Sam": the planner decides
    phone2 = SandboxPhone()
    planner2 = ScriptedPlanner([batch(("lookup_contact", {"name": "Priya"}), send), FINISH])
    ep2 = await _session(planner2, phone2, names, skills=lib, gates=gates, config=config).run("text Sam")
    assert [s.action.kind for s in ep2.steps] == ["tool_call", "finish"] and not phone2.state.messages.sent

async def test_a_refusal_after_an_error_gets_the_procedure_line_for_that_error(lib):
    names = ["convert_units", "calculate"]
    planner = ScriptedPlanner([
        call("convert_units", value=100, from_unit="m", to_unit="yd"),
        {"kind": "refuse", "reason": "not supported"},
        call("calculate", expression="100 / 0.9144"),
        FINISH,
    ])
    episode = await _session(planner, SandboxPhone(), names, skills=lib, preloaded=["unit-conversion"],
                             config=HarnessConfig()).run("What is 100 meters in yards?")
    assert episode.steps[0].results[0].error.code == "unsupported_unit"
    sent = episode.steps[1].results[0].error.message
    assert "Your procedure says:" in sent and "use calculate with the standard factor" in sent
    assert episode.stop_reason == "finish" and episode.steps[2].results[0].ok


async def test_the_step_after_a_refusal_sent_back_offers_no_refusal(lib):
    """A second refusal there would stand (the send-back is once per run): the planner that gets the
    error's route back is not offered refuse again, in that one step only."""
    names = ["convert_units", "calculate"]
    planner = ScriptedPlanner([
        call("convert_units", value=100, from_unit="m", to_unit="yd"),
        {"kind": "refuse", "reason": "not supported"},
        call("calculate", expression="100 / 0.9144"),
        {"kind": "refuse", "reason": "changed my mind"},
    ])
    episode = await _session(planner, SandboxPhone(), names, skills=lib, preloaded=["unit-conversion"],
                             config=HarnessConfig()).run("What is 100 meters in yards?")
    offered = [r.kinds for r in planner.requests]
    assert "refuse" in offered[1] and "refuse" not in offered[2] and "refuse" in offered[3]
    assert "ask_user" not in offered[2]  # the procedure names the route for unsupported_unit
    assert episode.stop_reason == "refuse" and len(episode.steps) == 4


async def test_a_refusal_after_a_gate_block_is_sent_back(lib):
    phone = SandboxPhone()
    phone.state.cast.active, phone.state.cast.target = True, "Bedroom TV"
    start = ("start_cast", {"target": "Office Display"})
    planner = ScriptedPlanner([batch(("get_cast_status", {}), start), {"kind": "refuse", "reason": "stop it first"},
                               call("stop_cast"), call(*start[:1], **start[1]), FINISH])
    config = HarnessConfig()
    episode = await _session(planner, phone, CAST, skills=lib, gates=lib.always_on_gates(CAST), config=config).run(
        "send the cast to the office display")
    assert episode.steps[1].results[0].error.code == "not_allowed"
    assert "stop_cast first" in episode.steps[1].results[0].error.message
    assert phone.state.cast.target == "Office Display" and episode.stop_reason == "finish"
