"""The criterion kinds for any world: last state change, call counts, error codes, value sets and
ranges, and per-delegation checks. Each is shown passing and failing on episodes built by hand."""

from __future__ import annotations

from typing import Any

import pytest
from _task_episodes import bad, calls, good, make_episode
from pydantic import TypeAdapter, ValidationError

from pocketpilot.contracts import Delegate, Finish, Step, ToolSpec
from pocketpilot.executor.sandbox import default_state
from pocketpilot.tasks import check_criterion
from pocketpilot.tasks.spec import Criterion

CRITERION: TypeAdapter[Criterion] = TypeAdapter(Criterion)
STATE = default_state()
SPECS = {
    "create_note": ToolSpec(name="create_note", effect="create"),
    "power_off": ToolSpec(name="power_off", effect="update", destructive=True),
    "get_settings": ToolSpec(name="get_settings", effect="read"),
    "list_notes": ToolSpec(name="list_notes", effect="read"),
}


def check(data: dict[str, Any], episode: Any, state: Any = STATE, tools: Any = SPECS, initial: Any = None) -> Any:
    return check_criterion(CRITERION.validate_python(data), initial if initial is not None else state, state,
                           episode, tools=tools)


# ---------------------------------------------------------------- last_call


def test_nothing_state_changing_after_power_off() -> None:
    last = {"kind": "last_call", "tool": "power_off"}
    done = make_episode(good("create_note", {"title": "x"}), good("power_off"), good("get_settings"),
                        Finish(summary="ok"))
    assert check(last, done).passed  # a read after power off changes nothing
    after = make_episode(good("power_off"), bad("create_note", {"title": "x"}, code="device_off"), Finish(summary="ok"))
    result = check(last, after)
    assert not result.passed and "create_note" in result.detail and "device_off" in result.detail
    never = check(last, make_episode(good("get_settings"), Finish(summary="ok")))
    assert not never.passed and never.detail == "no state-changing call"
    failed_off = make_episode(bad("power_off", code="denied"), Finish(summary="ok"))
    assert not check(last, failed_off).passed
    assert check(last | {"ok": False}, failed_off).passed


def test_a_parallel_batch_has_no_last_call() -> None:
    from pocketpilot.contracts import ToolResult

    ok = ToolResult.success(None)
    together = make_episode(calls(("create_note", {}, ok), ("power_off", {}, ok)), Finish(summary="ok"))
    result = check({"kind": "last_call", "tool": "power_off"}, together)
    assert not result.passed and "one parallel batch with create_note" in result.detail
    with_a_read = make_episode(calls(("get_settings", {}, ok), ("power_off", {}, ok)), Finish(summary="ok"))
    assert check({"kind": "last_call", "tool": "power_off"}, with_a_read).passed


def test_state_changing_is_read_from_the_declared_spec_not_the_name() -> None:
    """Swap the names' meaning: a tool called get_settings that writes, one called power_off that reads."""
    swapped = {"power_off": ToolSpec(name="power_off", effect="read"),
               "get_settings": ToolSpec(name="get_settings", effect="update"),
               "create_note": ToolSpec(name="create_note", effect="create")}
    episode = make_episode(good("create_note"), good("power_off"), Finish(summary="ok"))
    assert check({"kind": "last_call", "tool": "power_off"}, episode).passed
    assert not check({"kind": "last_call", "tool": "power_off"}, episode, tools=swapped).passed
    assert check({"kind": "last_call", "tool": "create_note"}, episode, tools=swapped).passed
    writes_by_name = make_episode(good("power_off"), good("get_settings"), Finish(summary="ok"))
    assert not check({"kind": "last_call", "tool": "power_off"}, writes_by_name, tools=swapped).passed


def test_last_call_defaults_to_the_specs_the_episode_recorded() -> None:
    episode = make_episode(good("power_off"), good("create_note"), Finish(summary="ok"))
    header = episode.header.model_copy(update={"tools": list(SPECS.values())})
    recorded = episode.model_copy(update={"header": header})
    assert not check({"kind": "last_call", "tool": "power_off"}, recorded, tools=None).passed
    assert check({"kind": "last_call", "tool": "create_note"}, recorded, tools=None).passed


# ---------------------------------------------------------------- count


@pytest.mark.parametrize(
    ("criterion", "calls", "passed"),
    [
        ({"at_most": 1}, 1, True),
        ({"at_most": 1}, 2, False),
        ({"at_most": 0}, 0, True),
        ({"at_least": 2}, 1, False),
        ({"at_least": 2}, 2, True),
        ({"at_least": 1, "at_most": 2}, 3, False),
        ({"at_least": 1, "at_most": 2}, 0, False),
    ],
)
def test_count_bounds(criterion: dict[str, Any], calls: int, passed: bool) -> None:
    episode = make_episode(*[good("create_note", {"title": f"n{i}"}) for i in range(calls)], Finish(summary="ok"))
    result = check({"kind": "count", "tool": "create_note", **criterion}, episode)
    assert result.passed is passed and result.detail == f"{calls} matching call(s)"


def test_count_matches_arguments_and_outcome() -> None:
    episode = make_episode(good("create_note", {"title": "Milk"}), bad("create_note", {"title": "milk run"}),
                           good("create_note", {"title": "Eggs"}), Finish(summary="ok"))
    assert check({"kind": "count", "tool": "create_note", "args": {"title": "milk"}, "at_most": 1}, episode).passed is False
    assert check({"kind": "count", "tool": "create_note", "args": {"title": "milk"}, "ok": True, "at_most": 1},
                 episode).passed
    assert check({"kind": "count", "tool": "create_note", "ok": False, "at_least": 1, "at_most": 1}, episode).passed


def test_count_needs_a_bound_in_order() -> None:
    with pytest.raises(ValidationError, match="needs at_least or at_most"):
        CRITERION.validate_python({"kind": "count", "tool": "create_note"})
    with pytest.raises(ValidationError, match="at_least 3 is above at_most 1"):
        CRITERION.validate_python({"kind": "count", "tool": "create_note", "at_least": 3, "at_most": 1})


# ---------------------------------------------------------------- no_error


def test_no_failed_call_with_a_code() -> None:
    episode = make_episode(bad("read_note", {"note_id": "note-9"}, code="not_found"), good("list_notes"),
                           Finish(summary="ok"))
    result = check({"kind": "no_error", "code": "not_found"}, episode)
    assert not result.passed and result.detail == "read_note failed with not_found at step 0"
    assert check({"kind": "no_error", "code": "device_off"}, episode).passed
    assert check({"kind": "no_error", "code": "not_found", "tool": "delete_note"}, episode).passed
    assert not check({"kind": "no_error", "code": "not_found", "tool": "read_note"}, episode).passed


# ---------------------------------------------------------------- in / between


def test_state_in_a_set_of_values() -> None:
    nothing = make_episode(Finish(summary="ok"))
    assert check({"kind": "state", "path": "settings.ring_mode", "in": ["vibrate", "normal"]}, nothing).passed
    result = check({"kind": "state", "path": "settings.ring_mode", "in": ["vibrate", "silent"]}, nothing)
    assert not result.passed and result.name == 'state settings.ring_mode in ["vibrate", "silent"]'
    assert not check({"kind": "state", "path": "settings.wifi", "in": [1, 0]}, nothing).passed  # a bool is no number
    with pytest.raises(ValidationError, match="not both"):
        CRITERION.validate_python({"kind": "state", "path": "a", "in": [1], "one_of": [2]})


@pytest.mark.parametrize(("brightness", "passed"), [(39, False), (40, True), (55, True), (70, True), (71, False)])
def test_state_between_is_inclusive(brightness: int, passed: bool) -> None:
    state = STATE.model_copy(deep=True)
    state.settings.brightness = brightness
    result = check({"kind": "state", "path": "settings.brightness", "between": [40, 70]},
                   make_episode(Finish(summary="ok")), state=state)
    assert result.passed is passed and result.detail == f"settings.brightness is {brightness}"


def test_between_refuses_what_is_not_a_number() -> None:
    nothing = make_episode(Finish(summary="ok"))
    assert not check({"kind": "state", "path": "settings.wifi", "between": [0, 1]}, nothing).passed
    assert not check({"kind": "state", "path": "settings.nope", "between": [0, 1]}, nothing).passed
    with pytest.raises(ValidationError, match="is above"):
        CRITERION.validate_python({"kind": "state", "path": "a", "between": [5, 1]})


def test_state_criteria_read_a_plain_dump_too() -> None:
    dump = {"plants": [{"name": "Fern", "moisture": 61.5}]}
    nothing = make_episode(Finish(summary="ok"))
    assert check({"kind": "state", "path": "plants.0.moisture", "between": [55, 80]}, nothing, state=dump).passed
    assert not check({"kind": "unchanged"}, nothing, state=dump, initial={"plants": []}).passed


# ---------------------------------------------------------------- delegations


def _delegations(*children: tuple[Delegate, list[Any]]) -> Any:
    steps = []
    for i, (d, child_steps) in enumerate(children):
        child = make_episode(*child_steps, stop="finish")
        steps.append(Step(index=i, context_digest=f"d{i}", action=d, results=[], children=[child]))
    done = make_episode(*[Finish(summary="x")] * (len(children) + 1))
    steps.append(done.steps[-1].model_copy(update={"index": len(children)}))
    return done.model_copy(update={"steps": steps})


SAVE = Delegate(instruction="Save the parking spot as a note")
TEXT = Delegate(instruction="Text Sam the note id", artifacts={"note_id": "note-4"})


def test_which_tools_a_sub_agent_used_and_must_not_have() -> None:
    episode = _delegations((SAVE, [good("list_notes"), good("create_note"), Finish(summary="saved")]))
    assert check({"kind": "delegated", "used": ["create_note"]}, episode).passed
    missing = check({"kind": "delegated", "used": ["send_sms"]}, episode)
    assert not missing.passed and "did not use send_sms" in missing.detail
    forbidden = check({"kind": "delegated", "not_used": ["list_notes"]}, episode)
    assert not forbidden.passed and "used list_notes" in forbidden.detail
    assert check({"kind": "delegated", "not_used": ["delete_note"]}, episode).passed
    failed_use = _delegations((SAVE, [bad("create_note"), Finish(summary="saved")]))
    assert not check({"kind": "delegated", "used": ["create_note"], "confirmed": False}, failed_use).passed
    assert not check({"kind": "delegated", "not_used": ["create_note"], "confirmed": False}, failed_use).passed


def test_the_order_between_delegations() -> None:
    save_then_text = _delegations((SAVE, [good("create_note"), Finish(summary="saved")]),
                                  (TEXT, [good("send_sms"), Finish(summary="sent")]))
    order = {"kind": "delegation_order", "before": {"instruction": "parking"}, "after": {"artifacts": {"note_id": "note-4"}}}
    result = check(order, save_then_text)
    assert result.passed and result.detail == "step 0 before step 1"
    text_then_save = _delegations((TEXT, [good("send_sms"), Finish(summary="sent")]),
                                  (SAVE, [good("create_note"), Finish(summary="saved")]))
    assert not check(order, text_then_save).passed
    by_tools = {"kind": "delegation_order", "before": {"used": ["create_note"]}, "after": {"used": ["send_sms"]}}
    assert check(by_tools, save_then_text).passed and not check(by_tools, text_then_save).passed
    only_one = check(order, _delegations((SAVE, [good("create_note"), Finish(summary="saved")])))
    assert not only_one.passed and only_one.detail.startswith("no delegation(note_id=")
