"""A hand-off is confirmed only when the child did some work: a call of a tool it was given succeeded.

A child that called nothing, or whose every call failed, finishes with a claim about nothing; it
is unconfirmed (``subagent_no_call``) for the parent and for a task's ``delegated`` criterion
alike, so a no-op delegation beside a parent that did the work itself meets no such criterion.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from scripted_actions import call, delegate, finish

from pocketpilot.contracts import Episode, EpisodeHeader, Finish, PlannerInfo, Step, ToolSpec
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone, default_state
from pocketpilot.handoff import review_handoff
from pocketpilot.harness import AllowAll, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import check_criterion
from pocketpilot.tasks.spec import Criterion

DELEGATED: Any = TypeAdapter(Criterion).validate_python({"kind": "delegated"})


def delegated_passes(episode: Episode) -> bool:
    state = default_state()
    return check_criterion(DELEGATED, state, state, episode).passed


async def _run(*actions: dict) -> tuple[Episode, SandboxPhone]:
    phone = SandboxPhone()
    tools = ["create_note", "list_notes", "read_note"]
    episode = await Session(ScriptedPlanner(list(actions)), SandboxExecutor(phone), tools=tools,
                            confirm=AllowAll()).run("save a note titled Parking saying level 3")
    return episode, phone


async def test_a_child_that_called_nothing_is_unconfirmed_and_the_parents_own_work_meets_no_delegated():
    episode, phone = await _run(
        delegate("Save a note titled Parking", ["create_note"]),
        finish("Saved."),  # the child claims it, having called nothing
        call("create_note", title="Parking", body="level 3"),  # the parent does the work itself
        finish("Saved the note."),
    )
    assert [n.title for n in phone.state.notes.items].count("Parking") == 1
    result = episode.steps[0].results[0]
    assert not result.ok and result.error.code == "subagent_no_call"
    assert result.data["confirmed"] is False and "artifacts" not in result.data
    assert "no call of its tools succeeded (it made none)" in result.error.message
    assert any(n.code == "subagent_unconfirmed" for n in episode.steps[0].notices)
    handoff = review_handoff(episode.steps[0].children[0])
    assert (handoff.succeeded, handoff.attempted, handoff.had_tools) == (0, 0, True)
    assert not delegated_passes(episode)  # the task's criterion agrees with the parent's feedback


async def test_a_child_that_did_the_work_meets_delegated():
    episode, _ = await _run(
        delegate("Save a note titled Parking", ["create_note"]),
        call("create_note", title="Parking", body="level 3"),
        finish("Saved."),
        finish("Saved the note."),
    )
    assert episode.steps[0].results[0].ok and delegated_passes(episode)


async def test_a_child_whose_every_call_failed_is_unconfirmed():
    episode, _ = await _run(
        delegate("Read the Parking note", ["read_note"]),
        call("read_note", note_id="note-999"),  # a read that fails: no failed write, and no work either
        finish("The note says level 3."),
        finish("parent stops"),
    )
    result = episode.steps[0].results[0]
    assert not result.ok and result.error.code == "subagent_no_call"
    assert "failed" not in result.data  # a failed read is not a failed state change
    assert "(1 attempted)" in result.error.message
    assert not delegated_passes(episode)


async def test_one_successful_read_beside_a_failed_one_is_work():
    episode, _ = await _run(
        delegate("Read the notes", ["read_note", "list_notes"]),
        call("read_note", note_id="note-999"),
        call("list_notes"),
        finish("Listed."),
        finish("parent stops"),
    )
    assert episode.steps[0].results[0].ok and delegated_passes(episode)


def _child(tools: list[ToolSpec]) -> Episode:
    header = EpisodeHeader(episode_id="c", request="say hello", planner=PlannerInfo(backend="t", model="m"), tools=tools)
    return Episode(header=header, steps=[Step(index=0, context_digest="0", action=Finish(summary="hello"))],
                   stop_reason="finish")


def test_a_child_given_no_tool_is_judged_on_its_stop_alone():
    """Nothing it could call: its hand-off is its answer (a parent with no tools to give)."""
    alone = review_handoff(_child([]))
    assert alone.confirmed and not alone.had_tools
    given = review_handoff(_child([ToolSpec(name="list_notes", read_only=True)]))  # type: ignore[call-arg]
    assert not given.confirmed and given.code == "subagent_no_call"
