"""A delegation repeated after a confirmed one is held (``repeat_delegation``); a different one runs."""

from __future__ import annotations

import json

import pytest
from scripted_actions import call, delegate, finish

from pocketpilot.contracts import Episode
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, Session, default_policies
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.policies import RepeatDelegation, from_entries
from pocketpilot.harness.policies.repeat_delegation import ALREADY_DELEGATED

SAVE = delegate("Save a note titled Parking", ["create_note"])
CHILD = [call("create_note", title="Parking", body="level 3"), finish("Saved.", "note saved")]


async def _run(script: list[dict], *, on: bool = True, request: str = "note where I parked",
               ) -> tuple[Episode, SandboxPhone, ScriptedPlanner]:
    phone = SandboxPhone()
    planner = ScriptedPlanner(script)
    policies = [*default_policies(), RepeatDelegation()] if on else default_policies()
    episode = await Session(planner, SandboxExecutor(phone), tools=["create_note", "list_notes"], confirm=AllowAll(),
                            policies=policies).run(request)
    return episode, phone, planner


async def test_a_repeat_of_a_confirmed_delegation_is_held_and_points_to_its_result():
    again = delegate("  save a note titled parking ", ["create_note"])  # whitespace and case aside, the same
    episode, phone, planner = await _run([SAVE, *CHILD, again, finish("Saved the note.")])
    assert [n.title for n in phone.state.notes.items].count("Parking") == 1  # no second sub-agent redid it
    held = episode.steps[1]
    assert held.children == [] and not held.results[0].ok
    assert held.results[0].error.code == ALREADY_DELEGATED
    assert "repeat_delegation" in held.interventions
    message = held.results[0].error.message
    assert "Step 1" in message and "note saved" in message  # the earlier step and its answer
    note_id = phone.state.notes.items[-1].id
    assert note_id in message  # and its artifacts
    # what the parent's planner read next
    fed = json.loads(planner.requests[-1].messages[-1].content)
    assert fed["error"]["code"] == ALREADY_DELEGATED
    assert planner.remaining == 0 and episode.stop_reason == "finish"


async def test_the_loop_guard_reads_a_held_repeat_as_one_that_worked():
    """Right after the confirmed one, with nothing the request names left undone, the loop guard
    asks for a conclusion as it does when the repeat runs: no refusal offered, nothing failed."""
    for on in (True, False):
        script = [SAVE, *CHILD, SAVE, *([] if on else CHILD), finish("Saved.")]
        episode, _, planner = await _run(script, on=on, request="sort out the parking thing")
        kinds = planner.requests[-1].kinds
        assert "finish" in kinds and not {"refuse", "delegate", "tool_call"} & set(kinds), (on, kinds)
        assert any(n.code == "repeated_delegation" for n in episode.steps[1].notices)


async def test_without_the_policy_the_repeat_runs_again():
    episode, phone, _ = await _run([SAVE, *CHILD, SAVE, *CHILD, finish("Saved.")], on=False)
    assert [n.title for n in phone.state.notes.items].count("Parking") == 2
    assert episode.steps[1].children and episode.steps[1].results[0].ok


@pytest.mark.parametrize("other", [
    delegate("Save a note titled Parking", ["create_note", "list_notes"]),  # other tools
    delegate("Save a note titled Gym", ["create_note"]),  # another instruction
    delegate("Save a note titled Parking", ["create_note"], {"body": "level 3"}),  # other values
])
async def test_a_different_delegation_is_not_held(other: dict):
    episode, _, _ = await _run([SAVE, *CHILD, other, *CHILD, finish("Saved.")])
    assert episode.steps[1].children and episode.steps[1].results[0].ok


async def test_a_repeat_of_an_unconfirmed_delegation_is_a_retry_and_runs():
    nothing = finish("Saved.")  # the child called nothing: not confirmed
    episode, phone, _ = await _run([SAVE, nothing, SAVE, *CHILD, finish("Saved.")])
    assert episode.steps[0].results[0].error.code == "subagent_no_call"
    assert episode.steps[1].children and episode.steps[1].results[0].ok
    assert [n.title for n in phone.state.notes.items].count("Parking") == 1


def test_it_is_named_in_eta_and_off_by_default():
    assert [p.name for p in from_entries([{"name": "repeat_delegation", "params": {"shown_chars": 100}}])] == [
        "repeat_delegation"]
    assert "repeat_delegation" not in [p.name for p in default_policies()]
    with pytest.raises(ValueError):
        RepeatDelegation(shown_chars=-1)


def test_bench_handoff_adds_the_policy_to_eta_for_every_variant():
    from bench_scripts import bench_script

    from pocketpilot.errors import UsageError
    from pocketpilot.evaluation.task_episode import load_harness_kit

    kit = load_harness_kit()
    with bench_script("bench_handoff") as bench:
        added = bench.with_policies(kit, ["repeat_delegation", "repeat_delegation"])
        names = [p.name for p in added.eta.policies]
        assert names == [*(p.name for p in kit.eta.policies), "repeat_delegation"]
        assert "repeat_delegation" in [p.name for p in added.eta.build_policies()]
        with pytest.raises(UsageError, match="unknown policy"):
            bench.with_policies(kit, ["no_such_policy"])
        assert bench.main(["--policy", "no_such_policy"], planner_for=lambda task, name: None, kit=kit) == 2
