"""Every sandbox tool: its success, its failures with their codes, and the state it leaves."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pocketpilot.contracts import ToolCall, ToolResult
from pocketpilot.executor.sandbox import PhoneState, SandboxExecutor, SandboxPhone


@pytest.fixture
def phone() -> SandboxPhone:
    return SandboxPhone(seed=0)


@pytest.fixture
def ex(phone: SandboxPhone) -> SandboxExecutor:
    return SandboxExecutor(phone)


async def call(ex: SandboxExecutor, tool_name: str, /, **arguments: Any) -> ToolResult:
    return await ex.call(ToolCall(name=tool_name, arguments=arguments))


def ok(result: ToolResult) -> Any:
    assert result.ok, result.error
    return result.data


def failed(result: ToolResult, code: str) -> ToolResult:
    assert not result.ok, result.data
    assert result.error is not None and result.error.code == code, result.error
    return result


# (tool, arguments, check(data, state)) for each success
SUCCESSES: list[tuple[str, dict[str, Any], Callable[[Any, PhoneState], bool]]] = [
    (
        "get_settings",
        {},
        lambda d, s: (
            d
            == {
                "wifi": True,
                "bluetooth": True,
                "do_not_disturb": False,
                "brightness": 60,
                "ring_mode": "normal",
            }
        ),
    ),
    ("set_wifi", {"enabled": False}, lambda d, s: s.settings.wifi is False),
    ("set_bluetooth", {"enabled": True}, lambda d, s: s.settings.bluetooth and s.earbuds.connected),
    ("set_bluetooth", {"enabled": False}, lambda d, s: not s.settings.bluetooth and not s.earbuds.connected),
    ("set_do_not_disturb", {"enabled": True}, lambda d, s: s.settings.do_not_disturb),
    ("set_brightness", {"level": 0}, lambda d, s: s.settings.brightness == 0),
    ("set_brightness", {"level": 100}, lambda d, s: s.settings.brightness == 100),
    ("set_ring_mode", {"mode": "vibrate"}, lambda d, s: s.settings.ring_mode == "vibrate"),
    ("get_earbuds_status", {}, lambda d, s: d["connected"] is True and d["noise_control"] == "off"),
    ("connect_earbuds", {}, lambda d, s: d == {"connected": True, "name": "Pixel Buds Pro"}),
    ("set_noise_control", {"mode": "transparency"}, lambda d, s: s.earbuds.noise_control == "transparency"),
    (
        "create_note",
        {"title": "Trip", "body": "tickets"},
        lambda d, s: (
            d["id"] == "note-4"
            and s.notes.items[-1].body == "tickets"
            and s.notes.next_id == 5
            and s.notes.items[-1].created_at == s.now
        ),
    ),
    ("list_notes", {}, lambda d, s: [n["id"] for n in d] == ["note-1", "note-2", "note-3"]),
    ("search_notes", {"query": "SUNFLOWER"}, lambda d, s: d == [{"id": "note-2", "title": "Wifi password"}]),
    ("search_notes", {"query": "zebra"}, lambda d, s: d == []),
    ("read_note", {"note_id": "note-1"}, lambda d, s: d["body"] == "milk, eggs, spinach"),
    (
        "delete_note",
        {"note_id": "note-2"},
        lambda d, s: [n.id for n in s.notes.items] == ["note-1", "note-3"],
    ),
    ("lookup_contact", {"name": "mom"}, lambda d, s: d["name"] == "Dana Lee" and d["phone"] == "+1-555-0105"),
    ("lookup_contact", {"name": "Alice Chen"}, lambda d, s: d["id"] == "c1"),
    ("lookup_contact", {"name": "prIya"}, lambda d, s: d["id"] == "c6"),
    (
        "list_contacts",
        {},
        lambda d, s: len(d) == 8 and d[0] == {"id": "c1", "name": "Alice Chen", "phone": "+1-555-0101"},
    ),
    (
        "send_sms",
        {"to": "Bobby", "body": "hi"},
        lambda d, s: d["number"] == "+1-555-0103" and s.messages.sent[-1].contact == "Bob Martin",
    ),
    (
        "send_sms",
        {"to": "+1 555 0104", "body": "yo"},
        lambda d, s: (
            s.messages.sent[-1].contact == "Carlos Diaz" and s.messages.sent[-1].number == "+1 555 0104"
        ),
    ),
    (
        "send_sms",
        {"to": "+44 20 7946 0000", "body": "x"},
        lambda d, s: s.messages.sent[-1].contact is None and d["id"] == "sms-4" and s.messages.next_id == 5,
    ),
    ("read_inbox", {}, lambda d, s: [m["id"] for m in d] == ["sms-1", "sms-3", "sms-2"]),
    ("read_inbox", {"sender": "Dana"}, lambda d, s: [m["id"] for m in d] == ["sms-2"]),
    ("read_inbox", {"sender": "+1-555-0199"}, lambda d, s: [m["id"] for m in d] == ["sms-3"]),
    ("read_inbox", {"unread_only": True, "limit": 1}, lambda d, s: [m["id"] for m in d] == ["sms-1"]),
    (
        "query_health",
        {"metric": "steps", "date": "yesterday"},
        lambda d, s: d["days"] == [{"date": "2025-03-13", "steps": s.health.days["2025-03-13"].steps}],
    ),
    (
        "query_health",
        {"metric": "heart_rate"},
        lambda d, s: d["days"][0]["resting_bpm"] == s.health.days["2025-03-14"].resting_heart_rate,
    ),
    (
        "query_health",
        {"metric": "sleep", "date": "2025-03-10"},
        lambda d, s: d["days"][0]["sleep_minutes"] == s.health.days["2025-03-10"].sleep_minutes,
    ),
    (
        "query_health",
        {"metric": "steps", "days": 3},
        lambda d, s: (
            len(d["days"]) == 3
            and d["total"] == sum(r["steps"] for r in d["days"])
            and d["average"] == round(d["total"] / 3, 1)
        ),
    ),
    (
        "convert_units",
        {"value": 10, "from_unit": "km", "to_unit": "miles"},
        lambda d, s: d["result"] == pytest.approx(6.2137, abs=1e-4) and d["to_unit"] == "mi",
    ),
    (
        "convert_units",
        {"value": 100, "from_unit": "C", "to_unit": "Fahrenheit"},
        lambda d, s: d["result"] == 212,
    ),
    ("convert_units", {"value": 3, "from_unit": "kg", "to_unit": "kg"}, lambda d, s: d["result"] == 3),
    ("calculate", {"expression": "400 / 0.9144"}, lambda d, s: d["result"] == pytest.approx(437.445319)),
    ("calculate", {"expression": "6 * 7"}, lambda d, s: d["result"] == 42 and isinstance(d["result"], int)),
    ("get_cast_status", {}, lambda d, s: d["active"] is False and "Bedroom TV" in d["available_targets"]),
    ("start_cast", {"target": "bedroom tv"}, lambda d, s: s.cast.active and s.cast.target == "Bedroom TV"),
    ("get_device_info", {}, lambda d, s: d["battery"] == 76 and d["now"].startswith("2025-03-14T09:30")),
    ("power_off", {}, lambda d, s: s.device.powered_on is False),
    ("launch_app", {"app": "spotify"}, lambda d, s: s.foreground_app == "com.spotify.music"),
    ("launch_app", {"app": "com.android.chrome"}, lambda d, s: s.foreground_app == "com.android.chrome"),
    ("get_foreground_app", {}, lambda d, s: d == {"package": "com.android.launcher3", "label": "Home"}),
    ("list_apps", {}, lambda d, s: {"label": "Maps", "package": "com.google.android.apps.maps"} in d),
    (
        "get_current_time",
        {},
        lambda d, s: d["date"] == "2025-03-14" and d["time"] == "09:30" and d["weekday"] == "Friday",
    ),
    ("list_alarms", {}, lambda d, s: [a["id"] for a in d] == ["alarm-1", "alarm-2"]),
    (
        "create_alarm",
        {"time": "05:45", "label": "Run"},
        lambda d, s: (
            d["id"] == "alarm-3" and s.alarms.items[-1].time == "05:45" and s.alarms.items[-1].enabled
        ),
    ),
    ("create_alarm", {"time": "06:15"}, lambda d, s: len(s.alarms.items) == 3),  # the 06:15 one is disabled
    ("set_alarm_enabled", {"alarm_id": "alarm-2", "enabled": True}, lambda d, s: s.alarms.items[1].enabled),
    ("delete_alarm", {"alarm_id": "alarm-1"}, lambda d, s: [a.id for a in s.alarms.items] == ["alarm-2"]),
    (
        "list_events",
        {"date": "2025-03-14"},
        lambda d, s: [e["title"] for e in d] == ["Dentist"] and d[0]["start_time"] == "15:00",
    ),
    ("list_events", {"date": "2025-03-20"}, lambda d, s: d == []),
    (
        "create_event",
        {"title": "Dinner", "date": "2025-03-15", "start_time": "19:30"},
        lambda d, s: (
            d["id"] == "event-3"
            and s.calendar.events[-1].start.isoformat() == "2025-03-15T19:30:00+01:00"
            and s.calendar.events[-1].duration_minutes == 60
        ),
    ),
    ("delete_event", {"event_id": "event-1"}, lambda d, s: [e.id for e in s.calendar.events] == ["event-2"]),
]

# (tool, arguments, setup(state) or None, expected error code)
FAILURES: list[tuple[str, dict[str, Any], Callable[[PhoneState], None] | None, str]] = [
    ("set_wifi", {}, None, "invalid_arguments"),
    ("set_wifi", {"enabled": True, "extra": 1}, None, "invalid_arguments"),
    ("set_brightness", {"level": 101}, None, "invalid_arguments"),
    ("set_brightness", {"level": -1}, None, "invalid_arguments"),
    ("set_ring_mode", {"mode": "loud"}, None, "invalid_arguments"),
    ("set_noise_control", {"mode": "max"}, None, "invalid_arguments"),
    (
        "set_noise_control",
        {"mode": "noise_cancelling"},
        lambda s: setattr(s.earbuds, "connected", False),
        "not_connected",
    ),
    ("connect_earbuds", {}, lambda s: setattr(s.settings, "bluetooth", False), "bluetooth_off"),
    ("connect_earbuds", {}, lambda s: setattr(s.earbuds, "paired", False), "not_found"),
    ("create_note", {"title": ""}, None, "invalid_arguments"),
    ("read_note", {"note_id": "note-99"}, None, "not_found"),
    ("delete_note", {"note_id": "note-99"}, None, "not_found"),
    ("lookup_contact", {"name": "Zed"}, None, "not_found"),
    ("lookup_contact", {"name": "Alice"}, None, "ambiguous"),
    ("lookup_contact", {"name": "  "}, None, "invalid_arguments"),
    ("send_sms", {"to": "Alice", "body": "hi"}, None, "ambiguous"),
    ("send_sms", {"to": "Zed", "body": "hi"}, None, "not_found"),
    ("send_sms", {"to": "Bob", "body": ""}, None, "invalid_arguments"),
    ("read_inbox", {"sender": "Alice"}, None, "ambiguous"),
    ("read_inbox", {"limit": 0}, None, "invalid_arguments"),
    ("query_health", {"metric": "steps", "date": "2024-01-01"}, None, "not_found"),
    ("query_health", {"metric": "steps", "days": 15}, None, "invalid_arguments"),
    ("query_health", {"metric": "steps", "date": "last week"}, None, "invalid_arguments"),
    ("query_health", {"metric": "blood_pressure"}, None, "invalid_arguments"),
    ("convert_units", {"value": 400, "from_unit": "m", "to_unit": "yd"}, None, "unsupported_unit"),
    ("convert_units", {"value": 1, "from_unit": "km", "to_unit": "kg"}, None, "unsupported_unit"),
    ("convert_units", {"value": 72, "from_unit": "kg", "to_unit": "stone"}, None, "unsupported_unit"),
    ("convert_units", {"value": "ten", "from_unit": "km", "to_unit": "mi"}, None, "invalid_arguments"),
    ("calculate", {"expression": "1/0"}, None, "math_error"),
    ("calculate", {"expression": "import os"}, None, "invalid_expression"),
    ("start_cast", {"target": "Kitchen TV"}, None, "not_found"),
    (
        "start_cast",
        {"target": "Bedroom TV"},
        lambda s: (setattr(s.cast, "active", True), setattr(s.cast, "target", "Living Room TV")),
        "conflict",
    ),
    ("stop_cast", {}, None, "not_active"),
    ("launch_app", {"app": "Tetris"}, None, "not_found"),
    ("create_alarm", {"time": "7:00"}, None, "invalid_arguments"),
    ("create_alarm", {"time": "24:00"}, None, "invalid_arguments"),
    ("create_alarm", {"time": "07:00"}, None, "conflict"),
    ("set_alarm_enabled", {"alarm_id": "alarm-9", "enabled": True}, None, "not_found"),
    ("delete_alarm", {"alarm_id": "alarm-9"}, None, "not_found"),
    ("list_events", {"date": "tomorrow"}, None, "invalid_arguments"),
    ("list_events", {"date": "2025-13-45"}, None, "invalid_arguments"),
    ("create_event", {"title": "x", "date": "2025-03-15", "start_time": "7pm"}, None, "invalid_arguments"),
    ("delete_event", {"event_id": "event-9"}, None, "not_found"),
]


@pytest.mark.parametrize(
    ("name", "arguments", "check"), SUCCESSES, ids=[f"{s[0]}-{i}" for i, s in enumerate(SUCCESSES)]
)
async def test_tool_success(
    phone: SandboxPhone,
    ex: SandboxExecutor,
    name: str,
    arguments: dict[str, Any],
    check: Callable[[Any, PhoneState], bool],
) -> None:
    data = ok(await call(ex, name, **arguments))
    assert check(data, phone.state), data


@pytest.mark.parametrize(
    ("name", "arguments", "setup", "code"),
    FAILURES,
    ids=[f"{f[0]}-{f[3]}-{i}" for i, f in enumerate(FAILURES)],
)
async def test_tool_failure_leaves_state_untouched(
    phone: SandboxPhone,
    ex: SandboxExecutor,
    name: str,
    arguments: dict[str, Any],
    setup: Callable[[PhoneState], None] | None,
    code: str,
) -> None:
    if setup is not None:
        setup(phone.state)
    before = phone.snapshot()
    failed(await call(ex, name, **arguments), code)
    assert phone.state == before


ORIGINAL_APPS = ("settings", "earbuds", "notes", "contacts", "messages", "health", "converter", "calculator", "cast",
                 "power", "launcher", "clock", "calendar")
"""The apps before issue 16 §2; the apps added since have their tables in test_sandbox_apps_*.py."""


def test_every_tool_has_a_success_and_a_described_schema(phone: SandboxPhone) -> None:
    specs = [phone.registry()[t].spec for app in ORIGINAL_APPS for t in phone.tool_names(app)]
    names = {s.name for s in specs}
    # stop_cast needs a live cast: its success is covered by test_cast_conflict_then_stop_then_start
    assert names == {s[0] for s in SUCCESSES} | {"stop_cast"}
    for spec in specs:
        assert spec.description and "\n" not in spec.description and len(spec.description) <= 100, spec.name
        for arg, schema in spec.parameters.get("properties", {}).items():
            assert schema.get("description"), f"{spec.name}.{arg} has no description"
    destructive = {s.name for s in specs if s.destructive}
    assert destructive == {"send_sms", "delete_note", "power_off", "delete_alarm", "delete_event"}


def test_schemas_carry_the_constraints(ex: SandboxExecutor) -> None:
    specs = {t.name: t.parameters for t in ex.tools()}
    assert specs["set_brightness"]["properties"]["level"]["maximum"] == 100
    assert specs["set_brightness"]["properties"]["level"]["minimum"] == 0
    assert specs["set_ring_mode"]["properties"]["mode"]["enum"] == ["normal", "vibrate", "silent"]
    assert specs["set_noise_control"]["properties"]["mode"]["enum"] == [
        "off",
        "transparency",
        "noise_cancelling",
    ]
    assert "pattern" in specs["create_alarm"]["properties"]["time"]
    assert specs["set_wifi"]["additionalProperties"] is False


async def test_ambiguous_contact_lists_candidates(ex: SandboxExecutor) -> None:
    result = failed(await call(ex, "lookup_contact", name="alice"), "ambiguous")
    assert result.data == {
        "candidates": [{"id": "c1", "name": "Alice Chen"}, {"id": "c2", "name": "Alice Moreau"}]
    }
    assert "Alice Chen" in result.error.message and "Alice Moreau" in result.error.message  # type: ignore[union-attr]


async def test_unsupported_unit_names_the_supported_pairs(ex: SandboxExecutor) -> None:
    result = failed(await call(ex, "convert_units", value=1, from_unit="m", to_unit="yd"), "unsupported_unit")
    assert "m->ft" in result.error.message  # type: ignore[union-attr]


async def test_cast_conflict_then_stop_then_start(phone: SandboxPhone, ex: SandboxExecutor) -> None:
    ok(await call(ex, "start_cast", target="Living Room TV"))
    result = failed(await call(ex, "start_cast", target="Bedroom TV"), "conflict")
    assert "Living Room TV" in result.error.message  # type: ignore[union-attr]
    assert phone.state.cast.target == "Living Room TV"
    assert ok(await call(ex, "stop_cast")) == {"active": False, "stopped": "Living Room TV"}
    ok(await call(ex, "start_cast", target="Bedroom TV"))
    assert ok(await call(ex, "get_cast_status"))["target"] == "Bedroom TV"


async def test_bluetooth_off_breaks_noise_control_until_reconnected(
    phone: SandboxPhone, ex: SandboxExecutor
) -> None:
    ok(await call(ex, "set_bluetooth", enabled=False))
    failed(await call(ex, "set_noise_control", mode="noise_cancelling"), "not_connected")
    failed(await call(ex, "connect_earbuds"), "bluetooth_off")
    ok(await call(ex, "set_bluetooth", enabled=True))
    assert phone.state.earbuds.connected is False  # turning bluetooth on does not reconnect by itself
    ok(await call(ex, "connect_earbuds"))
    ok(await call(ex, "set_noise_control", mode="noise_cancelling"))
    assert phone.state.earbuds.noise_control == "noise_cancelling"


async def test_ids_are_never_reused(ex: SandboxExecutor) -> None:
    first = ok(await call(ex, "create_note", title="a"))["id"]
    ok(await call(ex, "delete_note", note_id=first))
    assert ok(await call(ex, "create_note", title="b"))["id"] != first


async def test_power_off_blocks_every_tool(phone: SandboxPhone, ex: SandboxExecutor) -> None:
    ok(await call(ex, "start_cast", target="Bedroom TV"))
    ok(await call(ex, "power_off"))
    assert phone.state.cast.active is False  # powering off ends the cast
    frozen = phone.snapshot()
    for name, arguments, _ in SUCCESSES:
        result = failed(await call(ex, name, **arguments), "device_off")
        assert "powered off" in result.error.message  # type: ignore[union-attr]
    assert phone.state == frozen
    phone.reset()
    ok(await call(ex, "get_settings"))


async def test_outputs_are_deterministic() -> None:
    async def run() -> list[Any]:
        ex = SandboxExecutor(SandboxPhone(seed=5))
        return [
            (await call(ex, "create_note", title="x")).model_dump(),
            (await call(ex, "send_sms", to="Mom", body="hi")).model_dump(),
            (await call(ex, "query_health", metric="sleep", days=7)).model_dump(),
        ]

    assert await run() == await run()
