"""A delegation repeated after a confirmed one is held (``repeat_delegation``); a different one runs.

With ``unconfirmed``, so is one whose two latest runs went unconfirmed with children that did the same thing.
"""

from __future__ import annotations

import json

import pytest
from scripted_actions import call, delegate, finish

from pocketpilot.contracts import Episode
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, Session, default_policies
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.policies import PolicyError, RepeatDelegation, from_entries
from pocketpilot.harness.policies.repeat_delegation import ALREADY_DELEGATED, REPEATED_UNCONFIRMED
from pocketpilot.ids import IdSource, SeededIds

SAVE = delegate("Save a note titled Parking", ["create_note"])
CHILD = [call("create_note", title="Parking", body="level 3"), finish("Saved.", "note saved")]


LOOK = delegate("Save a note titled Parking", ["create_note", "list_notes"])
ASKS = [call("list_notes"), {"kind": "ask_user", "question": "Which level did you park on?"}]
"""A child that reads, then asks: not confirmed, and the same on every run."""


async def _run(script: list[dict], *, on: bool = True, request: str = "note where I parked", unconfirmed: bool = False,
               tools: tuple[str, ...] = ("create_note", "list_notes"), ids: IdSource | None = None,
               ) -> tuple[Episode, SandboxPhone, ScriptedPlanner]:
    phone = SandboxPhone()
    planner = ScriptedPlanner(script)
    policies = [*default_policies(), RepeatDelegation(unconfirmed=unconfirmed)] if on else default_policies()
    episode = await Session(planner, SandboxExecutor(phone), tools=list(tools), confirm=AllowAll(),
                            policies=policies, subagent_ids=ids).run(request)
    return episode, phone, planner


@pytest.mark.parametrize("unconfirmed", [False, True])
async def test_a_repeat_of_a_confirmed_delegation_is_held_and_points_to_its_result(unconfirmed: bool):
    again = delegate("  save a note titled parking ", ["create_note"])  # whitespace and case aside, the same
    episode, phone, planner = await _run([SAVE, *CHILD, again, finish("Saved the note.")], unconfirmed=unconfirmed)
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


def test_unconfirmed_is_an_eta_parameter_recorded_only_when_on():
    [built] = from_entries([{"name": "repeat_delegation", "params": {"unconfirmed": True}}])
    assert isinstance(built, RepeatDelegation) and built.unconfirmed
    assert built.params() == {"shown_chars": 400, "unconfirmed": True}
    assert built.fork().params() == built.params()
    # off, the trace header and η record what they recorded before the parameter existed
    assert RepeatDelegation().params() == RepeatDelegation(unconfirmed=False).params() == {"shown_chars": 400}
    with pytest.raises(PolicyError, match="unconfirmed must be true or false"):
        from_entries([{"name": "repeat_delegation", "params": {"unconfirmed": "yes"}}])


async def test_a_third_identical_unconfirmed_delegation_whose_children_did_the_same_is_held():
    episode, phone, planner = await _run([LOOK, *ASKS, LOOK, *ASKS, LOOK, finish("Could not save it.")],
                                         unconfirmed=True)
    first, second, held = episode.steps[:3]
    for ran in (first, second):
        assert ran.children and not ran.results[0].ok and ran.results[0].data["confirmed"] is False
    assert held.children == [] and held.results[0].error.code == REPEATED_UNCONFIRMED  # no sub-agent started
    assert "repeat_delegation" in held.interventions
    message = held.results[0].error.message
    assert "Steps 1 and 2" in message and "Which level did you park on?" in message  # what the child last said
    fed = json.loads(planner.requests[-1].messages[-1].content)
    assert fed["error"]["code"] == REPEATED_UNCONFIRMED
    assert planner.remaining == 0 and episode.stop_reason == "finish"


async def test_the_hold_shows_at_most_shown_chars_of_what_the_child_said():
    phone, planner = SandboxPhone(), ScriptedPlanner([LOOK, *ASKS, LOOK, *ASKS, LOOK, finish("No.")])
    episode = await Session(planner, SandboxExecutor(phone), tools=["create_note", "list_notes"], confirm=AllowAll(),
                            policies=[*default_policies(), RepeatDelegation(shown_chars=10, unconfirmed=True)],
                            ).run("note where I parked")
    message = episode.steps[2].results[0].error.message
    assert episode.steps[2].results[0].error.code == REPEATED_UNCONFIRMED
    assert "Which level" not in message and "…" in message


async def test_every_prompt_up_to_the_hold_is_the_one_seen_with_it_off():
    """The hold reads what the children did from the run's record, not from the hand-off results
    the planner reads: those, and so the prompts, are the same with the parameter on or off."""
    script = [LOOK, *ASKS, LOOK, *ASKS, LOOK, *ASKS, finish("Could not save it.")]
    off, _, off_planner = await _run(script, ids=SeededIds("redelegate"))
    on, _, on_planner = await _run(script, unconfirmed=True, ids=SeededIds("redelegate"))
    assert all(s.children for s in off.steps[:3]) and not on.steps[2].children
    assert [s.context_digest for s in on.steps[:3]] == [s.context_digest for s in off.steps[:3]]
    turns = 3 + 2 * len(ASKS)  # the parent's three delegations and its two children's turns
    assert [r.model_dump_json() for r in on_planner.requests[:turns]] == [
        r.model_dump_json() for r in off_planner.requests[:turns]]


NOTE = call("create_note", title="Parking")


@pytest.mark.parametrize(("first", "second"), [
    (ASKS, [ASKS[0], NOTE, ASKS[1]]),  # another call
    (ASKS, ASKS[1:]),  # no call at all
    ([NOTE, ASKS[1]], [call("create_note", title="Parking", body="level 3"), ASKS[1]]),  # other arguments
    ([ASKS[0], NOTE, ASKS[1]], [NOTE, *ASKS]),  # another order
])
async def test_children_that_did_different_things_do_not_hold_the_third_run(first: list[dict], second: list[dict]):
    script = [LOOK, *first, LOOK, *second, LOOK, *ASKS, finish("Could not save it.")]
    episode, _, planner = await _run(script, unconfirmed=True)
    assert all(s.children for s in episode.steps[:3])
    assert planner.remaining == 0 and episode.stop_reason == "finish"


async def test_children_whose_same_calls_met_other_outcomes_do_not_hold_the_third_run():
    """The first child deleted the note; the second's identical call found none: the phone did
    not reproduce the child, so a third run is no foregone repeat."""
    note = SandboxPhone().state.notes.items[0].id
    drop = delegate("Delete the old parking note", ["delete_note"])
    child = [call("delete_note", note_id=note), {"kind": "ask_user", "question": "Which other note should go?"}]
    episode, _, planner = await _run([drop, *child, drop, *child, drop, *child, finish("Could not delete it.")],
                                     unconfirmed=True, tools=("delete_note", "list_notes"))
    outcomes = [s.children[0].steps[0].results[0] for s in episode.steps[:2]]
    assert outcomes[0].ok and outcomes[1].error.code == "not_found"
    assert episode.steps[2].children and planner.remaining == 0


@pytest.mark.parametrize("other", [
    delegate("Save a note titled Parking", ["create_note", "list_notes"], {"level": "3"}),  # other artifacts
    delegate("Save a note titled Parking level", ["create_note", "list_notes"]),  # another instruction
])
async def test_a_different_delegation_after_two_identical_unconfirmed_runs(other: dict):
    episode, _, planner = await _run([LOOK, *ASKS, LOOK, *ASKS, other, *ASKS, finish("Could not save it.")],
                                     unconfirmed=True)
    assert all(s.children for s in episode.steps[:3])
    assert planner.remaining == 0 and episode.stop_reason == "finish"


async def test_with_it_off_identical_unconfirmed_repeats_all_run():
    for policy_on in (True, False):
        episode, _, planner = await _run([LOOK, *ASKS] * 4 + [finish("Could not save it.")], on=policy_on)
        assert all(s.children and s.results[0].error.code != REPEATED_UNCONFIRMED for s in episode.steps[:4])
        assert planner.remaining == 0 and episode.stop_reason == "finish"


async def test_the_loop_guard_does_not_read_an_unconfirmed_hold_as_one_that_worked():
    """Right after the run it repeats, with nothing the request names left undone, the loop guard
    reacts to the held repeat as to a repeat that failed: a conclusion, refusal included (a
    held confirmed repeat offers no refusal: the earlier one worked)."""
    script = [LOOK, *ASKS, call("list_notes"), LOOK, *ASKS, LOOK, finish("Could not save it.")]
    episode, _, planner = await _run(script, unconfirmed=True, request="sort out the parking thing")
    held = episode.steps[3]
    assert held.results[0].error.code == REPEATED_UNCONFIRMED
    assert any(n.code == "repeated_delegation" for n in held.notices)
    kinds = planner.requests[-1].kinds
    assert {"finish", "ask_user", "refuse"} <= set(kinds) and not {"delegate", "tool_call"} & set(kinds), kinds


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
