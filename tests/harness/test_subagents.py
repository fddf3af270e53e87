"""Sub-agents: confined tools, confirmed results only, explicit artifacts, traces nested in the parent's."""

from __future__ import annotations

import json

from scripted_actions import call, delegate, finish

from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.skills import SkillLibrary
from pocketpilot.tracing.trace import read_trace

NOTES = ["create_note", "list_notes", "search_notes", "read_note"]


def session(planner, phone, tools=None, **kw):
    return Session(planner, SandboxExecutor(phone), tools=tools, confirm=AllowAll(), **kw)


async def test_confirmed_child_result_surfaces_artifacts_and_nests_in_trace(tmp_path):
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [
            delegate("Save a note: parked on level 3", NOTES),  # parent step 0
            call("create_note", title="Parking", body="Level 3"),  # child step 0
            finish("saved note"),  # child step 1
            call("power_off"),  # parent step 1: acts only after the child's confirmed result
            finish("saved and off"),
        ]
    )
    parent = session(planner, phone, tools=[*NOTES, "power_off"], trace_dir=tmp_path)
    episode = await parent.run("note my parking spot, then power off")
    assert episode.stop_reason == "finish"
    d = episode.steps[0]
    result = d.results[0]
    assert result.ok and result.data["confirmed"] is True
    note_id = phone.state.notes.items[-1].id
    assert result.data["artifacts"] == {"create_note.id": note_id}
    assert any(note_id in n for n in d.notices)
    # ordering: the parent's next request already holds the child's confirmed result and artifacts
    parent_requests = [r for r in planner.requests if "delegate" in r.kinds]
    assert len(parent_requests) == 3
    feedback = parent_requests[1].messages[-1].content
    assert json.loads(feedback)["data"]["artifacts"] == {"create_note.id": note_id}
    # the child saw only its tools and could not delegate further
    child_requests = [r for r in planner.requests if "delegate" not in r.kinds]
    assert {t.name for t in child_requests[0].tools} == set(NOTES)
    # the JSONL trace holds the child's episode inside the parent's step
    loaded, complete = read_trace(parent.trace_path)
    assert complete
    child = loaded.steps[0].children[0]
    assert child.header.parent_episode_id == loaded.header.episode_id
    assert [s.action.kind for s in child.steps] == ["tool_call", "finish"]
    assert child.steps[0].results[0].data["id"] == note_id
    assert not phone.state.device.powered_on


async def test_unconfirmed_child_withholds_artifacts():
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [
            delegate("Save a note", NOTES),
            call("create_note", title="Half", body="x"),
            {"kind": "ask_user", "question": "which note?"},  # child stops without a finish
            finish("parent stops"),
        ]
    )
    episode = await session(planner, phone, tools=NOTES).run("save a note")
    result = episode.steps[0].results[0]
    assert not result.ok and result.error.code == "subagent_unconfirmed"
    assert result.data["confirmed"] is False and "artifacts" not in result.data
    assert "ask_user" in result.error.message
    assert any("not confirmed" in n for n in episode.steps[0].notices)
    assert episode.steps[0].children[0].stop_reason == "ask_user"


async def test_child_is_confined_to_its_app_tools():
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [
            delegate("Cast to the TV", ["get_cast_status", "start_cast", "stop_cast"]),
            call("power_off"),  # outside the child's tools: refused, never executed
            finish("could not"),
            finish("parent done"),
        ]
    )
    parent = session(planner, phone, tools=["get_cast_status", "start_cast", "stop_cast", "power_off"])
    episode = await parent.run("cast")
    child = episode.steps[0].children[0]
    assert child.steps[0].action is None and child.steps[0].error.code == "invalid_action"
    assert phone.state.device.powered_on


async def test_delegating_unexposed_tools_is_refused_without_a_child():
    phone = SandboxPhone()
    planner = ScriptedPlanner([delegate("Text Sam", ["send_sms"]), finish("no")])
    episode = await session(planner, phone, tools=NOTES).run("text sam")
    step = episode.steps[0]
    assert step.results[0].error.code == "unknown_tool" and "send_sms" in step.results[0].error.message
    assert step.children == []


async def test_artifacts_passed_explicitly_to_the_next_child():
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [
            delegate("Find the wifi note", NOTES),
            call("search_notes", query="wifi"),
            finish("found"),
            delegate("Read the note", ["read_note"], {"note_id": "note-2"}),
            call("read_note", note_id="note-2"),
            finish("read it"),
            finish("all done"),
        ]
    )
    episode = await session(planner, phone, tools=NOTES).run("read my wifi note")
    second_child_first_request = [r for r in planner.requests if "delegate" not in r.kinds][2]
    request_text = second_child_first_request.messages[1].content
    assert 'Artifacts: {"note_id": "note-2"}' in request_text
    assert episode.steps[1].results[0].data["confirmed"]


async def test_child_inherits_precondition_gates():
    lib = SkillLibrary.builtin()
    phone = SandboxPhone()
    phone.state.cast.active, phone.state.cast.target = True, "Living Room TV"
    cast = ["get_cast_status", "start_cast", "stop_cast"]
    planner = ScriptedPlanner(
        [
            delegate("Cast to the bedroom TV", cast),
            call("start_cast", target="Bedroom TV"),  # child: state unknown, blocked by the parent's gate
            finish("tried"),
            finish("parent done"),
        ]
    )
    parent = session(planner, phone, tools=cast, gates=lib.always_on_gates(cast))
    episode = await parent.run("cast to bedroom")
    child = episode.steps[0].children[0]
    assert child.steps[0].results[0].error.code == "precondition_failed"
    assert phone.state.cast.target == "Living Room TV"
