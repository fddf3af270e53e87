"""Sandbox world state: defaults, serialization, snapshot/restore/reset, diffs and paths."""

from __future__ import annotations

from datetime import datetime

import pytest
from pydantic import ValidationError

from pocketpilot.contracts import ToolCall
from pocketpilot.executor.sandbox import (
    MISSING,
    PhoneState,
    SandboxExecutor,
    SandboxPhone,
    check_path,
    default_state,
    diff_states,
    resolve_path,
)
from pocketpilot.executor.sandbox.seeding import HEALTH_DAYS


def test_default_state_is_deterministic_per_seed() -> None:
    assert default_state(0) == default_state(0)
    assert default_state(0).health != default_state(1).health
    # only the health history depends on the seed
    a, b = default_state(0).model_dump(), default_state(1).model_dump()
    assert {k for k in a if a[k] != b[k]} == {"health", "seed"}


def test_default_world_contents() -> None:
    state = default_state()
    assert state.now.tzinfo is not None
    assert len(state.health.days) == HEALTH_DAYS
    assert max(state.health.days) == state.now.date().isoformat()
    assert state.foreground_app == "com.android.launcher3"
    assert state.device.powered_on and not state.cast.active


def test_json_round_trip() -> None:
    state = default_state(3)
    state.settings.brightness = 17
    again = PhoneState.model_validate_json(state.model_dump_json())
    assert again == state
    phone = SandboxPhone.from_json(state.model_dump_json())
    assert phone.state == state and phone.to_json() == state.model_dump_json()


def test_clock_must_be_timezone_aware() -> None:
    data = default_state().model_dump()
    data["now"] = datetime(2025, 1, 1, 9, 0)
    with pytest.raises(ValidationError, match="timezone-aware"):
        PhoneState.model_validate(data)


def test_state_rejects_invalid_assignment_and_extra_fields() -> None:
    state = default_state()
    with pytest.raises(ValidationError):
        state.settings.brightness = 101
    with pytest.raises(ValidationError):
        state.settings.ring_mode = "loud"  # type: ignore[assignment]
    with pytest.raises(ValidationError):
        PhoneState.model_validate({**default_state().model_dump(), "bogus": 1})


async def test_snapshot_is_independent_and_restore_replaces_everything() -> None:
    phone = SandboxPhone()
    ex = SandboxExecutor(phone)
    snap = phone.snapshot()
    await ex.call(ToolCall(name="set_wifi", arguments={"enabled": False}))
    await ex.call(ToolCall(name="create_note", arguments={"title": "t"}))
    assert snap.settings.wifi is True and len(snap.notes.items) == 3
    phone.restore(snap)
    assert phone.state == snap
    # restore copies: mutating the phone does not touch the snapshot
    await ex.call(ToolCall(name="set_brightness", arguments={"level": 5}))
    assert snap.settings.brightness == 60
    # tools act on the restored state, not on a stale object
    assert phone.state.settings.brightness == 5


async def test_reset_returns_to_the_construction_state_not_the_default() -> None:
    start = default_state()
    start.settings.wifi = False
    phone = SandboxPhone(start)
    ex = SandboxExecutor(phone)
    await ex.call(ToolCall(name="set_wifi", arguments={"enabled": True}))
    await ex.call(ToolCall(name="power_off"))
    phone.reset()
    assert phone.state == start and phone.state.device.powered_on
    start.settings.brightness = 1  # the phone kept its own copy
    phone.reset()
    assert phone.state.settings.brightness == 60


def test_diff_reports_leaf_changes_and_whole_lists_that_changed_length() -> None:
    a = default_state()
    b = a.model_copy(deep=True)
    b.settings.wifi = False
    b.alarms.items[0].enabled = False
    b.notes.items = b.notes.items[:1]
    changes = {c.path: (c.before, c.after) for c in diff_states(a, b)}
    assert changes["settings.wifi"] == (True, False)
    assert changes["alarms.items.0.enabled"] == (True, False)
    assert len(changes["notes.items"][0]) == 3 and len(changes["notes.items"][1]) == 1
    assert len(changes) == 3
    assert diff_states(a, a.model_copy(deep=True)) == []


def test_changes_since() -> None:
    phone = SandboxPhone()
    snap = phone.snapshot()
    phone.state.foreground_app = "com.spotify.music"
    assert [c.path for c in phone.changes_since(snap)] == ["foreground_app"]


def test_resolve_path() -> None:
    data = default_state().model_dump(mode="json")
    assert resolve_path(data, "settings.wifi") is True
    assert resolve_path(data, "notes.items.0.title") == "Groceries"
    assert resolve_path(data, "notes.items.9.title") is MISSING
    assert resolve_path(data, "settings.nope") is MISSING
    assert resolve_path(data, "settings.wifi.x") is MISSING
    assert resolve_path(data, "health.days.2025-03-14.steps") == data["health"]["days"]["2025-03-14"]["steps"]


@pytest.mark.parametrize(
    "path",
    ["settings.wifi", "notes.items.0.title", "health.days.2025-03-14.steps", "foreground_app", "cast.target"],
)
def test_check_path_accepts_schema_paths(path: str) -> None:
    check_path(path)


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("setings.wifi", "no field 'setings'"),
        ("settings.wifi.on", "plain value"),
        ("notes.items.first", "not an index"),
        ("notes.items.0.colour", "no field 'colour'"),
    ],
)
def test_check_path_rejects_bad_paths(path: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        check_path(path)
