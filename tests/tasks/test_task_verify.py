"""Every verifier building block, passing and failing, on hand-built episodes."""

from __future__ import annotations

from typing import Any

import pytest
from _task_episodes import bad, calls, good, make_episode
from pydantic import TypeAdapter

from pocketpilot.contracts import AskUser, Finish, Refuse, ToolResult
from pocketpilot.executor.sandbox import PhoneState, default_state
from pocketpilot.tasks import TaskSpec, check_criterion, matches, verify
from pocketpilot.tasks.spec import Criterion

CRITERION: TypeAdapter[Criterion] = TypeAdapter(Criterion)
EMPTY = make_episode(Finish(summary="done"))


def crit(**data: Any) -> Criterion:
    return CRITERION.validate_python(data)


def check(
    c: Criterion, episode: Any = EMPTY, initial: PhoneState | None = None, final: PhoneState | None = None
) -> Any:
    initial = initial or default_state()
    return check_criterion(c, initial, final or initial, episode)


def changed(**settings: Any) -> PhoneState:
    state = default_state()
    for key, value in settings.items():
        setattr(state.settings, key, value)
    return state


# ---------------------------------------------------------------- matches


@pytest.mark.parametrize(
    ("actual", "expected", "result"),
    [
        ("Hello World", "world", True),
        ("Hello", "bye", False),
        ({"a": 1, "b": "Text here"}, {"b": "text"}, True),
        ({"a": 1}, {"a": 2}, False),
        ({"a": 1}, {"c": 1}, False),
        (True, 1, False),
        (1, True, False),
        (1, 1.0, True),
        ([1, 2], [1, 2], True),
        (None, None, True),
        ("x", {"a": 1}, False),
    ],
)
def test_matches(actual: Any, expected: Any, result: bool) -> None:
    assert matches(actual, expected) is result


# ---------------------------------------------------------------- state


@pytest.mark.parametrize(
    ("criterion", "final", "passed"),
    [
        ({"path": "settings.wifi", "equals": False}, changed(wifi=False), True),
        ({"path": "settings.wifi", "equals": False}, changed(), False),
        ({"path": "settings.brightness", "equals": 60}, changed(), True),
        ({"path": "settings.wifi", "equals": 1}, changed(), False),  # True is not 1
        ({"path": "settings.ring_mode", "one_of": ["vibrate", "silent"]}, changed(ring_mode="silent"), True),
        ({"path": "settings.ring_mode", "one_of": ["vibrate", "silent"]}, changed(), False),
        ({"path": "notes.items", "contains": {"title": "groceries", "body": "eggs"}}, changed(), True),
        ({"path": "notes.items", "contains": {"title": "groceries", "body": "bread"}}, changed(), False),
        ({"path": "notes.items.0.body", "contains": "SPINACH"}, changed(), True),
        ({"path": "notes.items", "not_contains": {"title": "groceries"}}, changed(), False),
        ({"path": "notes.items", "not_contains": {"title": "taxes"}}, changed(), True),
        ({"path": "notes.items.7.title", "equals": "x"}, changed(), False),  # missing path
        (
            {"path": "notes.items.7.title", "not_contains": "x"},
            changed(),
            False,
        ),  # missing is not "absent text"
        ({"path": "cast.target", "equals": None}, changed(), True),
    ],
)
def test_state(criterion: dict[str, Any], final: PhoneState, passed: bool) -> None:
    result = check(crit(kind="state", **criterion), final=final)
    assert result.passed is passed, result
    assert criterion["path"] in result.name and criterion["path"] in result.detail


def test_state_detail_shows_the_value() -> None:
    result = check(crit(kind="state", path="settings.brightness", equals=20))
    assert not result.passed and result.detail == "settings.brightness is 60"
    assert result.name == "state settings.brightness == 20"


def test_state_needs_exactly_one_test() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        crit(kind="state", path="settings.wifi")
    with pytest.raises(ValueError, match="exactly one"):
        crit(kind="state", path="settings.wifi", equals=True, contains=True)


# ---------------------------------------------------------------- call / no_call


def test_call_passes_on_a_successful_matching_call() -> None:
    ep = make_episode(good("send_sms", {"to": "Bob Martin", "body": "Yes, 12:30"}), Finish(summary="ok"))
    assert check(crit(kind="call", tool="send_sms", args={"to": "bob", "body": "12:30"}), ep).passed
    assert check(crit(kind="call", tool="send_sms"), ep).passed


@pytest.mark.parametrize(
    ("criterion", "why"),
    [
        ({"tool": "send_sms"}, "never called"),
        ({"tool": "set_wifi", "args": {"enabled": True}}, "0 of 1 needed"),
        ({"tool": "start_cast"}, "-> conflict"),
        ({"tool": "set_wifi", "min_count": 2}, "1 of 2 needed"),
    ],
)
def test_call_fails_with_a_reason(criterion: dict[str, Any], why: str) -> None:
    ep = make_episode(
        good("set_wifi", {"enabled": False}), bad("start_cast", {"target": "TV"}), Finish(summary="ok")
    )
    result = check(crit(kind="call", **criterion), ep)
    assert not result.passed and why in result.detail, result


def test_call_ok_false_and_none() -> None:
    ep = make_episode(bad("start_cast"), Finish(summary="ok"))
    assert check(crit(kind="call", tool="start_cast", ok=False), ep).passed
    assert check(crit(kind="call", tool="start_cast", ok=None), ep).passed
    assert not check(crit(kind="call", tool="start_cast"), ep).passed
    ep2 = make_episode(good("start_cast"), Finish(summary="ok"))
    assert not check(crit(kind="call", tool="start_cast", ok=False), ep2).passed


def test_no_call_counts_failed_attempts_too() -> None:
    c = crit(kind="no_call", tool="send_sms")
    assert check(c, EMPTY).passed
    result = check(
        c, make_episode(bad("send_sms", {"to": "x", "body": "y"}, code="denied"), Finish(summary="s"))
    )
    assert not result.passed and "step 0" in result.detail
    only_bob = crit(kind="no_call", tool="send_sms", args={"to": "bob"})
    assert check(
        only_bob, make_episode(good("send_sms", {"to": "Sam", "body": "y"}), Finish(summary="s"))
    ).passed


# ---------------------------------------------------------------- order


ORDER = {"kind": "order", "before": {"tool": "create_note"}, "after": {"tool": "power_off"}}


def test_order_passes_when_before_precedes_after() -> None:
    ep = make_episode(good("create_note"), good("power_off"), Finish(summary="s"))
    result = check(crit(**ORDER), ep)
    assert result.passed and result.name == "order create_note before power_off"


def test_order_fails_when_reversed() -> None:
    result = check(crit(**ORDER), make_episode(good("power_off"), good("create_note"), Finish(summary="s")))
    assert not result.passed and "came after" in result.detail


def test_order_fails_within_one_parallel_batch() -> None:
    ep = make_episode(
        calls(("create_note", {}, ToolResult.success()), ("power_off", {}, ToolResult.success())),
        Finish(summary="s"),
    )
    result = check(crit(**ORDER), ep)
    assert not result.passed and "same parallel batch" in result.detail


def test_order_ignores_failed_calls_and_needs_both() -> None:
    ep = make_episode(bad("create_note"), good("power_off"), good("create_note"), Finish(summary="s"))
    assert not check(crit(**ORDER), ep).passed  # the first *successful* create_note came after
    missing_after = check(crit(**ORDER), make_episode(good("create_note"), Finish(summary="s")))
    assert not missing_after.passed and "no successful power_off" in missing_after.detail
    missing_before = check(crit(**ORDER), make_episode(good("power_off"), Finish(summary="s")))
    assert not missing_before.passed and "no successful create_note" in missing_before.detail


def test_order_matches_arguments() -> None:
    c = crit(
        kind="order",
        before={"tool": "set_do_not_disturb", "args": {"enabled": True}},
        after={"tool": "start_cast"},
    )
    wrong = make_episode(
        good("set_do_not_disturb", {"enabled": False}), good("start_cast"), Finish(summary="s")
    )
    assert not check(c, wrong).passed
    right = make_episode(
        good("set_do_not_disturb", {"enabled": True}), good("start_cast"), Finish(summary="s")
    )
    assert check(c, right).passed


# ---------------------------------------------------------------- unchanged


def test_unchanged() -> None:
    initial = default_state()
    final = changed(wifi=False, brightness=5)
    assert check(crit(kind="unchanged"), initial=initial, final=initial.model_copy(deep=True)).passed
    result = check(crit(kind="unchanged", allow=["settings.wifi"]), initial=initial, final=final)
    assert not result.passed and "settings.brightness: 60 -> 5" in result.detail
    assert "settings.wifi" not in result.detail
    assert check(crit(kind="unchanged", allow=["settings"]), initial=initial, final=final).passed
    # a prefix must end at a path boundary: "settings.wi" does not allow settings.wifi
    assert not check(
        crit(kind="unchanged", allow=["settings.wi", "settings.brightness"]), initial=initial, final=final
    ).passed


# ---------------------------------------------------------------- stop / answer


@pytest.mark.parametrize(
    ("episode", "reasons", "passed"),
    [
        (make_episode(AskUser(question="who?")), ["ask_user"], True),
        (make_episode(Finish(summary="done")), ["ask_user"], False),
        (make_episode(Refuse(reason="no")), ["refuse"], True),
        (make_episode(good("set_wifi"), stop="max_steps"), ["finish"], False),
        (make_episode(Finish(summary="done"), stop="max_steps"), ["finish"], False),  # stop_reason wins
        (make_episode(Finish(summary="done")), ["finish", "ask_user"], True),
    ],
)
def test_stop(episode: Any, reasons: list[str], passed: bool) -> None:
    result = check(crit(kind="stop", reason=reasons), episode)
    assert result.passed is passed and "stopped by" in result.detail


def test_stop_accepts_a_single_reason() -> None:
    assert crit(kind="stop", reason="ask_user").reason == ["ask_user"]  # type: ignore[union-attr]
    with pytest.raises(ValueError):
        crit(kind="stop", reason="giving_up")


@pytest.mark.parametrize(
    ("summary", "criterion", "passed"),
    [
        ("You walked 8,432 steps.", {"all_of": ["8432"]}, True),
        ("You walked 8432 steps.", {"all_of": ["8,432"]}, True),
        ("You walked 8,431 steps.", {"all_of": ["8432"]}, False),
        ("About 437.45 yards", {"any_of": ["437.4", "437.5"]}, True),
        ("About 440 yards", {"any_of": ["437.4", "437.5"]}, False),
        ("Resting HR 58 bpm", {"all_of": ["58", "BPM"]}, True),
        ("Resting HR 58", {"all_of": ["58", "bpm"]}, False),
    ],
)
def test_answer(summary: str, criterion: dict[str, Any], passed: bool) -> None:
    result = check(crit(kind="answer", **criterion), make_episode(Finish(summary=summary)))
    assert result.passed is passed, result


def test_answer_needs_a_finish() -> None:
    result = check(crit(kind="answer", all_of=["58"]), make_episode(AskUser(question="58?")))
    assert not result.passed and "ended with ask_user" in result.detail
    with pytest.raises(ValueError, match="all_of or any_of"):
        crit(kind="answer")


# ---------------------------------------------------------------- verify


def test_verify_reports_every_criterion_and_succeeds_only_if_all_pass() -> None:
    task = TaskSpec.model_validate(
        {
            "id": "t-1",
            "goal": "Turn off wifi",
            "capability": "single_tool",
            "split": "dev",
            "criteria": [
                {"kind": "state", "path": "settings.wifi", "equals": False},
                {"kind": "call", "tool": "set_wifi"},
                {"kind": "unchanged", "allow": ["settings.wifi"]},
            ],
        }
    )
    initial = default_state()
    ep = make_episode(good("set_wifi", {"enabled": False}), Finish(summary="off"))
    verdict = verify(task, initial, changed(wifi=False), ep)
    assert verdict.success and len(verdict.criteria) == 3 and verdict.progress == 1.0
    partial = verify(task, initial, changed(wifi=False, brightness=1), ep)
    assert not partial.success and [c.passed for c in partial.criteria] == [True, True, False]
    assert partial.progress == pytest.approx(2 / 3)
