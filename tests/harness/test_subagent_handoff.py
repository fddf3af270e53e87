"""Honest hand-offs: a sub-agent's finish is confirmed only if its calls took effect and its verifier passed."""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter
from scripted_actions import call, delegate, finish

from pocketpilot.contracts import CriterionResult, Episode, ToolCall, ToolResult, ToolSpec, Verdict
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone, default_state
from pocketpilot.handoff import changes_state, review_handoff
from pocketpilot.harness import AllowAll, DenyAll, Session, default_policies
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import check_criterion
from pocketpilot.tasks.spec import Criterion

DELEGATED: Any = TypeAdapter(Criterion).validate_python({"kind": "delegated"})


def parent_feedback(planner: ScriptedPlanner, step: int) -> dict:
    """The tool message the parent's planner read after its ``step``-th own step."""
    parent_requests = [r for r in planner.requests if "delegate" in r.kinds]
    return json.loads(parent_requests[step + 1].messages[-1].content)


def delegated_passes(episode: Episode) -> bool:
    state = default_state()
    return check_criterion(DELEGATED, state, state, episode).passed


async def test_child_whose_only_call_was_denied_reports_denied_not_done():
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [
            delegate("Text Sam that I'm late", ["send_sms"]),
            call("send_sms", to="Sam", body="running late"),  # child: denied under DenyAll
            finish("Sent Sam the message."),  # the child claims success anyway
            finish("parent stops"),
        ]
    )
    # a child that may go on after a denial (on_denial="hold") and claims success anyway
    parent = Session(planner, SandboxExecutor(phone), tools=["send_sms"], confirm=DenyAll(),
                     policies=default_policies(on_denial="hold"))
    episode = await parent.run("tell Sam I'm late")
    assert phone.state.messages.sent == []
    step = episode.steps[0]
    result = step.results[0]
    assert not result.ok and result.error.code == "subagent_denied"
    assert result.data["confirmed"] is False and "artifacts" not in result.data
    assert [c["tool"] for c in result.data["denied"]] == ["send_sms"]
    assert result.data["denied"][0]["code"] == "confirmation_denied"
    assert "send_sms" in result.error.message and "denied" in result.error.message
    assert any("stays denied" in n for n in step.notices)
    # what the parent's planner read next says the same, not "confirmed"
    feedback = parent_feedback(planner, 0)
    assert feedback["ok"] is False and feedback["data"]["confirmed"] is False
    assert feedback["error"]["code"] == "subagent_denied"
    # the child's own record keeps the denial, and a task's delegated criterion agrees with the parent
    assert step.children[0].steps[0].results[0].error.code == "confirmation_denied"
    assert step.children[0].stop_reason == "finish"
    assert not delegated_passes(episode)


async def test_by_default_a_denial_ends_the_childs_run_and_the_parent_reads_it_as_denied():
    phone = SandboxPhone()
    planner = ScriptedPlanner([
        delegate("Text Sam that I'm late", ["send_sms"]),
        call("send_sms", to="Sam", body="running late"),
        finish("Sent Sam the message."),  # never asked for: the child's run ended at the denial
        call("send_sms", to="Sam", body="running late"),  # nor the parent's own try: its run ended too
    ])
    episode = await Session(planner, SandboxExecutor(phone), tools=["send_sms"], confirm=DenyAll()).run("tell Sam I'm late")
    child = episode.steps[0].children[0]
    assert child.stop_reason == "denied" and "send_sms" in child.stop_detail and len(child.steps) == 1
    result = episode.steps[0].results[0]
    assert result.error.code == "subagent_denied" and [c["tool"] for c in result.data["denied"]] == ["send_sms"]
    assert phone.state.messages.sent == [] and not delegated_passes(episode)
    assert episode.stop_reason == "denied" and len(episode.steps) == 1 and "send_sms" in episode.stop_detail


async def test_child_whose_call_failed_reports_failed():
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [
            delegate("Turn the gym alarm on", ["list_alarms", "set_alarm_enabled"]),
            call("set_alarm_enabled", alarm_id="alarm-9", enabled=True),  # no such alarm
            finish("Gym alarm is on."),
            finish("parent stops"),
        ]
    )
    parent = Session(planner, SandboxExecutor(phone), tools=["list_alarms", "set_alarm_enabled"], confirm=AllowAll())
    episode = await parent.run("turn on my gym alarm")
    result = episode.steps[0].results[0]
    assert not result.ok and result.error.code == "subagent_failed"
    assert result.data["confirmed"] is False and "denied" not in result.data
    assert [(c["tool"], c["code"]) for c in result.data["failed"]] == [("set_alarm_enabled", "not_found")]
    assert "alarm-9" in result.error.message  # the tool's own message reaches the parent
    assert parent_feedback(planner, 0)["error"]["code"] == "subagent_failed"
    assert not delegated_passes(episode)


def _note_titled(phone: SandboxPhone, title: str):
    async def verifier(episode: Episode) -> Verdict:
        ok = any(n.title == title for n in phone.state.notes.items)
        return Verdict(success=ok, criteria=[CriterionResult(name=f"note {title!r} saved", passed=ok)])

    return verifier


async def test_child_whose_verifier_fails_is_unverified():
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [
            delegate("Save a note titled Parking", ["create_note"]),
            call("create_note", title="Shopping", body="level 3"),  # succeeds, but is not what was asked
            finish("Saved the parking note."),
            finish("parent stops"),
        ]
    )
    parent = Session(planner, SandboxExecutor(phone), tools=["create_note"], confirm=AllowAll(),
                     subagent_verifier=_note_titled(phone, "Parking"))
    episode = await parent.run("note where I parked")
    result = episode.steps[0].results[0]
    assert not result.ok and result.error.code == "subagent_unverified"
    assert result.data["confirmed"] is False and result.data["verified"] is False
    assert "note 'Parking' saved" in result.error.message
    assert "artifacts" not in result.data  # the wrong note's id is not handed on
    child = episode.steps[0].children[0]
    assert child.verdict is not None and not child.verdict.success
    assert parent_feedback(planner, 0)["data"]["verified"] is False


async def test_child_that_succeeded_is_confirmed_with_its_artifacts():
    phone = SandboxPhone()
    planner = ScriptedPlanner(
        [
            delegate("Save a note titled Parking", ["create_note"]),
            call("create_note", title="Parking", body="level 3"),
            finish("Saved the parking note."),
            finish("parent stops"),
        ]
    )
    parent = Session(planner, SandboxExecutor(phone), tools=["create_note"], confirm=AllowAll(),
                     subagent_verifier=_note_titled(phone, "Parking"))
    episode = await parent.run("note where I parked")
    result = episode.steps[0].results[0]
    note_id = phone.state.notes.items[-1].id
    assert result.ok and result.data["confirmed"] is True and result.data["verified"] is True
    assert result.data["artifacts"] == {"create_note.id": note_id}
    assert "denied" not in result.data and "failed" not in result.data
    feedback = parent_feedback(planner, 0)
    assert feedback["ok"] is True and feedback["data"]["artifacts"] == {"create_note.id": note_id}
    assert delegated_passes(episode)


class Drafts:
    """An executor whose ``save_draft`` fails once (returning a provisional id) and then works."""

    def __init__(self) -> None:
        self.saved: list[str] = []
        self._busy = True

    def tools(self) -> list[ToolSpec]:
        return [ToolSpec(name="save_draft", parameters={"type": "object", "properties": {"text": {"type": "string"}}},
                         artifact_fields=["id"])]

    async def call(self, call: ToolCall) -> ToolResult:
        if self._busy:
            self._busy = False
            return ToolResult.failure("busy", "storage busy, try again", {"id": "draft-tmp"})
        self.saved.append(call.arguments["text"])
        return ToolResult.success({"id": f"draft-{len(self.saved)}"})


async def test_a_failure_the_same_call_made_good_counts_and_failed_results_give_no_artifacts():
    drafts = Drafts()
    save = call("save_draft", text="hello")
    planner = ScriptedPlanner([delegate("Save a draft", ["save_draft"]), save, save, finish("saved"), finish("ok")])
    episode = await Session(planner, drafts, confirm=AllowAll()).run("save a draft saying hello")
    child = episode.steps[0].children[0]
    assert [r.ok for s in child.steps[:2] for r in s.results] == [False, True]
    result = episode.steps[0].results[0]
    assert result.ok and result.data["confirmed"] is True
    # only the successful result's id: the failed attempt's provisional id is not a product
    assert result.data["artifacts"] == {"save_draft.id": "draft-1"}


async def test_a_different_call_does_not_make_a_failure_good():
    drafts = Drafts()
    planner = ScriptedPlanner([delegate("Save a draft", ["save_draft"]), call("save_draft", text="hello"),
                               call("save_draft", text="something else"), finish("saved"), finish("ok")])
    episode = await Session(planner, drafts, confirm=AllowAll()).run("save a draft saying hello")
    result = episode.steps[0].results[0]
    assert result.error.code == "subagent_failed" and result.data["failed"][0]["code"] == "busy"


def test_every_call_changes_state_unless_declared_read_only():
    assert changes_state(ToolSpec(name="list_notes"))  # no declaration: conservative, whatever the name
    assert changes_state(None)


def test_a_failed_read_only_lookup_does_not_unconfirm_a_hand_off():
    from pocketpilot.contracts import EpisodeHeader, Finish, PlannerInfo, Step, ToolCallAction

    lookup = ToolSpec(name="lookup", read_only=True)  # type: ignore[call-arg]
    write = ToolSpec(name="write")
    header = EpisodeHeader(episode_id="c", request="r", planner=PlannerInfo(backend="t", model="m"), tools=[lookup, write])
    steps = [
        Step(index=0, context_digest="0", action=ToolCallAction(calls=[ToolCall(name="lookup")]),
             results=[ToolResult.failure("not_found", "none")]),
        Step(index=1, context_digest="1", action=ToolCallAction(calls=[ToolCall(name="write")]),
             results=[ToolResult.success({"id": "w1"})]),
        Step(index=2, context_digest="2", action=Finish(summary="ok")),
    ]
    episode = Episode(header=header, steps=steps, stop_reason="finish")
    assert review_handoff(episode).confirmed
    failing_write = episode.model_copy(update={"steps": [steps[0], steps[1].model_copy(
        update={"results": [ToolResult.failure("conflict", "no")]}), steps[2]]})
    assert not review_handoff(failing_write).confirmed
