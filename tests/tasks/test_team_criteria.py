"""The checks a team needs (issue 34 item 6): either-field tests, a number inside text, counts and
order over every kind of action, "the parent made no call itself", and a team's own Python check.
Each is shown passing and failing, on hand-built episodes and through a task file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _task_episodes import bad, good, make_episode
from pydantic import TypeAdapter, ValidationError

from pocketpilot.contracts import (
    Delegate,
    Finish,
    LoadSkill,
    MemorySearch,
    MemoryWrite,
    Step,
    ToolCall,
    ToolCallAction,
    ToolResult,
)
from pocketpilot.errors import TaskSpecError
from pocketpilot.executor.sandbox import default_state
from pocketpilot.tasks import check_criterion, load_task, parse_task, prepare, run_actions, run_oracle, verify
from pocketpilot.tasks.audit import audit_task, vacuous_criteria
from pocketpilot.tasks.spec import Criterion
from pocketpilot.tasks.verify import numbers_in

CRITERION: TypeAdapter[Criterion] = TypeAdapter(Criterion)
HERE = Path(__file__).parent / "team_checks"
START = default_state()
NOTHING = make_episode(Finish(summary="ok"))


def _state(**notes: str) -> Any:
    """The default phone with one note added (title/body as given)."""
    state = START.model_copy(deep=True)
    dump = state.model_dump(mode="json")
    dump["notes"]["items"].append({**dump["notes"]["items"][0], "id": "note-99", "title": notes.get("title", ""),
                                   "body": notes.get("body", "")})
    return type(state).model_validate(dump)


def check(data: dict[str, Any], episode: Any = NOTHING, state: Any = START, initial: Any = START,
          roots: Any = (HERE,)) -> Any:
    return check_criterion(CRITERION.validate_python(data), initial, state, episode, roots=roots)


# ---------------------------------------------------------------- either field


NOTE_42 = {"kind": "either", "path": "notes.items", "fields": ["title", "body"], "contains": "42", "created": True}


@pytest.mark.parametrize(("title", "body", "passed"), [
    ("Parked on level 3, bay 42", "Switched the phone off.", True),  # the demo's 1.5B note
    ("Parking", "Level 3, bay 42", True),
    ("Parking", "Level 3, bay 41", False),
])
def test_either_field_of_a_new_element(title: str, body: str, passed: bool) -> None:
    result = check(NOTE_42, state=_state(title=title, body=body))
    assert result.passed is passed
    if passed:
        assert result.detail.startswith("notes.items.") and "42" in result.detail
    else:
        assert "notes.items.0.title is \"Parking\"" in result.detail and "bay 41" in result.detail


def test_either_field_counts_only_new_elements_when_created() -> None:
    assert any("42" in n.body for n in START.notes.items)  # a seeded note, "sunflower42"
    fresh = check(NOTE_42)
    assert not fresh.passed and fresh.detail.startswith("no new element")
    assert check({k: v for k, v in NOTE_42.items() if k != "created"}).passed  # without created the seed passes


def test_either_field_from_the_root_and_of_a_record() -> None:
    wifi = {"kind": "either", "fields": ["settings.wifi", "settings.bluetooth"], "equals": False}
    state = START.model_copy(deep=True)
    state.settings.wifi, state.settings.bluetooth = True, True
    assert not check(wifi, state=state).passed
    state.settings.bluetooth = False
    result = check(wifi, state=state)
    assert result.passed and result.detail == "settings.bluetooth is false"
    record = {"kind": "either", "path": "settings", "fields": ["wifi", "bluetooth"], "in": [False]}
    assert check(record, state=state).passed


def test_either_needs_one_test_and_two_fields() -> None:
    with pytest.raises(ValidationError, match="exactly one of"):
        CRITERION.validate_python({"kind": "either", "fields": ["a", "b"]})
    with pytest.raises(ValidationError, match="at least 2"):
        CRITERION.validate_python({"kind": "either", "fields": ["a"], "equals": 1})
    with pytest.raises(ValidationError, match="created needs a path"):
        CRITERION.validate_python({"kind": "either", "fields": ["a", "b"], "equals": 1, "created": True})


# ---------------------------------------------------------------- a number inside text


def test_numbers_are_read_out_of_text() -> None:
    assert numbers_in("level 3, bay 42") == [3.0, 42.0]
    assert numbers_in("8,432 steps, -5 degrees") == [8432.0, -5.0]
    assert numbers_in("on 2025-03-14 at 9.5") == [2025.0, 3.0, 14.0, 9.5]
    assert numbers_in("no digits") == []


@pytest.mark.parametrize(("between", "passed"), [([40, 44], True), ([42, 42], True), ([43, 50], False),
                                                 ([1, 2], False)])
def test_a_number_inside_text_within_a_range(between: list[int], passed: bool) -> None:
    state = _state(title="Parking", body="Level 3, bay 42")
    c = {"kind": "number_in_text", "path": "notes.items", "fields": ["title", "body"], "between": between,
         "created": True}
    result = check(c, state=state)
    assert result.passed is passed
    if not passed:
        assert result.detail == "numbers in 2 text(s): 3, 42"


def test_a_number_inside_text_reads_one_text_field_and_refuses_what_is_not_text() -> None:
    state = START.model_copy(deep=True)
    state.notes.items[0].body = "Gate B, about 1,250 metres"
    path = "notes.items.0.body"
    assert check({"kind": "number_in_text", "path": path, "between": [1000, 1500]}, state=state).passed
    wifi = check({"kind": "number_in_text", "path": "settings.wifi", "between": [0, 1]})
    assert not wifi.passed and wifi.detail.startswith("no text at settings.wifi")
    none_new = check({"kind": "number_in_text", "path": "notes.items", "fields": ["body"], "between": [0, 99],
                      "created": True})
    assert not none_new.passed


# ---------------------------------------------------------------- counts and order over every action


def _child(*steps: Any) -> Any:
    return make_episode(*steps, stop="finish")


def _episode(*steps: Any) -> Any:
    """Steps as (action, results) / action / (Delegate, child episode)."""
    built = []
    for i, step in enumerate(steps):
        if isinstance(step, tuple) and isinstance(step[0], Delegate):
            built.append(Step(index=i, context_digest=f"d{i}", action=step[0],
                              results=[ToolResult.success({"confirmed": True})], children=[step[1]]))
            continue
        action, results = step if isinstance(step, tuple) else (step, [])
        built.append(Step(index=i, context_digest=f"d{i}", action=action, results=results))
    return make_episode(Finish(summary="x")).model_copy(update={"steps": built, "stop_reason": "finish"})


SEARCH = MemorySearch(query="brother's number")
SEND = good("send_message", {"to": "Sam", "text": "hi"})
HELPER = Delegate(instruction="Text Sam the parking spot")


def test_a_memory_search_before_a_call() -> None:
    order = {"kind": "action_order", "before": {"action": "memory_search"}, "after": {"tool": "send_message"}}
    result = check(order, _episode(SEARCH, SEND, Finish(summary="sent")))
    assert result.passed and result.detail == "step 0 before step 1"
    late = check(order, _episode(SEND, SEARCH, Finish(summary="sent")))
    assert not late.passed and "came after" in late.detail
    never = check(order, _episode(SEND, Finish(summary="sent")))
    assert not never.passed and never.detail == "no memory_search"
    refused = (SEARCH, [ToolResult.failure("memory_error", "store closed")])
    assert not check(order, _episode(refused, SEND, Finish(summary="sent"))).passed  # a failed search did nothing


def test_counts_of_memory_actions_skills_and_delegations() -> None:
    episode = _episode(SEARCH, (MemorySearch(query="dentist"), []), MemoryWrite(content="likes tea"),
                       LoadSkill(name="messaging"), (HELPER, _child(SEND, Finish(summary="sent"))),
                       Finish(summary="done"))
    assert check({"kind": "action_count", "action": "memory_search", "at_least": 2, "at_most": 2}, episode).passed
    assert check({"kind": "action_count", "action": "memory_search", "text": "dentist", "at_most": 1,
                  "at_least": 1}, episode).passed
    assert check({"kind": "action_count", "action": "memory_write", "at_least": 1}, episode).passed
    assert check({"kind": "action_count", "action": "load_skill", "text": "messaging", "at_least": 1}, episode).passed
    delegated = check({"kind": "action_count", "action": "delegate", "at_least": 1}, episode)
    assert delegated.passed and delegated.detail == "1 matching action(s) (at step 4)"
    assert not check({"kind": "action_count", "action": "delegate", "at_least": 1}, _episode(SEND)).passed
    too_many = check({"kind": "action_count", "action": "memory_search", "at_most": 1}, episode)
    assert not too_many.passed and too_many.detail.startswith("2 matching action(s)")


def test_counts_tell_the_parent_from_its_sub_agents() -> None:
    episode = _episode(SEARCH, (HELPER, _child(MemorySearch(query="sam"), SEND, Finish(summary="sent"))),
                       Finish(summary="done"))
    by = {who: check({"kind": "action_count", "action": "memory_search", "by": who, "at_least": 1, "at_most": 1},
                     episode).passed for who in ("parent", "sub_agent")}
    assert by == {"parent": True, "sub_agent": True}
    assert check({"kind": "action_count", "action": "memory_search", "at_least": 2}, episode).passed
    assert check({"kind": "action_count", "tool": "send_message", "by": "sub_agent", "at_least": 1}, episode).passed
    assert not check({"kind": "action_count", "tool": "send_message", "by": "parent", "at_least": 1}, episode).passed
    order = check({"kind": "action_order", "before": {"action": "delegate"},
                   "after": {"tool": "send_message", "by": "sub_agent"}}, episode)
    assert order.passed and order.detail == "step 1 before step 1.1"  # a delegation precedes its sub-agent's work


def test_a_parallel_batch_gives_no_order_and_failed_calls_count_only_when_asked() -> None:
    ok = ToolResult.success(None)
    batch = (ToolCallAction(calls=[ToolCall(name="list_notes"), ToolCall(name="send_message")]), [ok, ok])
    result = check({"kind": "action_order", "before": {"tool": "list_notes"}, "after": {"tool": "send_message"}},
                   _episode(batch, Finish(summary="x")))
    assert not result.passed and "same parallel batch" in result.detail
    failed = _episode(bad("send_message"), Finish(summary="x"))
    assert not check({"kind": "action_count", "tool": "send_message", "at_least": 1}, failed).passed
    assert check({"kind": "action_count", "tool": "send_message", "ok": None, "at_least": 1}, failed).passed
    assert check({"kind": "action_count", "tool": "send_message", "ok": False, "at_least": 1}, failed).passed


def test_action_patterns_say_what_they_look_for() -> None:
    for bad_pattern, message in [({}, "needs a tool or an action kind"),
                                 ({"action": "memory_search", "tool": "x"}, "tool belongs to a tool_call"),
                                 ({"action": "delegate", "args": {"a": 1}}, "args belong to a tool"),
                                 ({"tool": "x", "text": "y"}, "a call matches by args")]:
        with pytest.raises(ValidationError, match=message):
            CRITERION.validate_python({"kind": "action_count", "at_least": 1, **bad_pattern})
    with pytest.raises(ValidationError, match="needs at_least or at_most"):
        CRITERION.validate_python({"kind": "action_count", "action": "delegate"})


# ---------------------------------------------------------------- the parent made no call itself


def test_the_parent_made_no_call_itself() -> None:
    c = {"kind": "no_parent_call"}
    all_delegated = _episode((HELPER, _child(good("list_notes"), SEND, Finish(summary="sent"))),
                             Finish(summary="done"))
    result = check(c, all_delegated)
    assert result.passed and result.detail == "all 2 call(s) by sub-agents"
    helped = _episode(good("list_notes"), (HELPER, _child(SEND, Finish(summary="sent"))), Finish(summary="done"))
    result = check(c, helped)
    assert not result.passed and result.detail == "the parent called list_notes at step 0"
    denied = _episode(bad("send_message", code="denied"), Finish(summary="x"))
    assert not check(c, denied).passed  # an attempt is a call made


# ---------------------------------------------------------------- a team's own check


def test_a_check_returns_a_verdict_and_a_detail() -> None:
    c = {"kind": "check", "ref": "parking_checks:parked", "args": {"bay": "42"}}
    done = make_episode(Finish(summary="saved"))
    result = check(c, done, state=_state(title="bay 42"))
    assert result.passed and result.detail == "notes mentioning bay 42: ['note-99']; stop finish"
    assert result.name == "check parking_checks:parked" and result.kind == "check"
    asked = make_episode(Finish(summary="saved"), stop="ask_user")
    assert not check(c, asked, state=_state(title="bay 42")).passed
    assert not check({**c, "args": {"bay": "77"}}, done, state=_state(title="bay 42")).passed
    assert check({"kind": "check", "ref": "parking_checks:new_note"}, state=_state(title="x")).passed
    assert not check({"kind": "check", "ref": "parking_checks:new_note"}).passed  # reads the start state too


@pytest.mark.parametrize(("ref", "detail"), [
    ("parking_checks:explodes", "the check raised KeyError: 'no_such_section'"),
    ("parking_checks:says_maybe", "the check returned \"maybe\", not a bool or (bool, detail)"),
    ("parking_checks:in_a_hurry", "the check is async; a check is a plain function"),
])
def test_a_check_that_misbehaves_is_a_failed_criterion_never_a_crash(ref: str, detail: str) -> None:
    result = check({"kind": "check", "ref": ref})
    assert not result.passed and result.detail == detail


def test_a_check_cannot_change_what_other_criteria_read() -> None:
    from pocketpilot.tasks.spec import TaskSpec

    task = TaskSpec.model_validate({
        "id": "vandal-check", "goal": "x", "capability": "single_tool", "split": "dev",
        "criteria": [{"kind": "check", "ref": "parking_checks:vandal"},
                     {"kind": "state", "path": "settings.wifi", "equals": True}],
    }).with_roots((HERE,))
    episode = make_episode(good("list_notes"), Finish(summary="ok"))
    verdict = verify(task, START, START, episode)
    assert verdict.success and len(episode.steps) == 2
    assert [c.kind for c in verdict.criteria] == ["check", "state"]


@pytest.mark.parametrize(("ref", "message"), [
    ("parking_checks:missing", "criteria[0]: check 'parking_checks:missing': module 'parking_checks' has no "
                               "attribute 'missing'"),
    ("no_such_module:fn", "criteria[0]: check 'no_such_module:fn': cannot import 'no_such_module'"),
    ("parking_checks:NOT_CALLABLE", "criteria[0]: check 'parking_checks:NOT_CALLABLE' is a int, not a function"),
])
def test_a_bad_check_reference_is_refused_at_load(ref: str, message: str) -> None:
    data = {"id": "bad-check", "goal": "x", "capability": "single_tool", "split": "dev",
            "criteria": [{"kind": "check", "ref": ref}]}
    with pytest.raises(TaskSpecError) as info:
        parse_task(data, "bad-check", roots=[HERE])
    assert message in str(info.value)
    with pytest.raises(ValidationError, match="is not a 'module:attr' reference"):
        CRITERION.validate_python({"kind": "check", "ref": "parking_checks.py"})


def test_an_either_field_that_fits_no_record_is_refused_at_load() -> None:
    data = {"id": "bad-either", "goal": "x", "capability": "single_tool", "split": "dev",
            "criteria": [{**NOTE_42, "fields": ["title", "bodyy"]}]}
    with pytest.raises(TaskSpecError, match="criteria\\[0\\]: bad path .*has no field 'bodyy'"):
        parse_task(data, "bad-either")


# ---------------------------------------------------------------- in a task file, audited


async def test_a_task_with_the_new_checks_passes_its_oracle_and_its_audit() -> None:
    task = load_task(HERE / "parked.yaml")
    episode, run = await run_oracle(task)
    verdict = await run.verifier(episode)
    assert verdict.success, [(c.name, c.detail) for c in verdict.criteria if not c.passed]
    assert [c.kind for c in verdict.criteria] == ["check", "check", "either", "number_in_text", "unchanged"]
    lazy = prepare(task)
    nothing = await lazy.verifier(await run_actions(lazy, [Finish(summary="Saved.")]))
    assert [c.passed for c in nothing.criteria] == [False, False, False, False, True]
    report = await audit_task(task)
    assert report.ok, report


def test_the_audit_catches_new_criteria_that_hold_at_the_start() -> None:
    from pocketpilot.tasks.spec import TaskSpec

    task = TaskSpec.model_validate({
        "id": "vacuous-new-kinds", "goal": "Turn the wifi off.", "capability": "single_tool", "split": "dev",
        "criteria": [
            {"kind": "check", "ref": "parking_checks:wifi_off", "name": "hook"},
            {"kind": "either", "path": "notes.items", "fields": ["title", "body"], "contains": "42", "name": "seed"},
            {"kind": "number_in_text", "path": "notes.items", "fields": ["body"], "between": [42, 42], "name": "n"},
            {"kind": "either", "fields": ["settings.wifi", "settings.bluetooth"], "equals": True, "name": "on"},
            {"kind": "action_count", "action": "memory_search", "at_most": 3, "name": "guard"},
            {"kind": "no_parent_call", "name": "parent"},
            {"kind": "action_order", "before": {"action": "memory_search"}, "after": {"tool": "set_wifi"},
             "name": "order"},
        ],
    }).with_roots((HERE,))
    # wifi starts on, and a seeded note's body ("sunflower42") holds 42; the hook (wifi off), the
    # order and the guards do not hold on a run that did nothing or are not judged on it
    assert sorted(vacuous_criteria(task)) == ["n", "on", "seed"]


async def test_the_task_with_a_team_check_passes_through_the_harness_and_bare() -> None:
    from pocketpilot.evaluation.oracle_replay import replay_oracles
    from pocketpilot.evaluation.task_episode import load_harness_kit

    blocked = await replay_oracles([load_task(HERE / "parked.yaml")], modes=("harness", "bare"),
                                   kit=load_harness_kit())
    assert blocked == [], "\n".join(b.line() for b in blocked)
