"""The smart-home app: device control, the lock's PIN, scenes, away mode."""

from __future__ import annotations

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

from pocketpilot.executor.sandbox import PhoneState
from pocketpilot.executor.sandbox.sections.home import HomeDevice


def _dev(s: PhoneState, device_id: str) -> HomeDevice:
    return next(d for d in s.home.devices if d.id == device_id)


SUCCESSES = [
    Ok("list_home_devices", {"room": "living room"}, lambda d, s: [x["id"] for x in d] == ["dev-1", "dev-2", "dev-8"]),
    Ok("list_home_devices", {"kind": "light"}, lambda d, s: len(d) == 5 and "position" not in d[0]),
    Ok("get_home_device", {"device_id": "dev-6"}, lambda d, s: d["target_c"] == 21.0 and d["mode"] == "heat"),
    Ok("set_device_power", {"device_id": "dev-5", "on": True}, lambda d, s: _dev(s, "dev-5").on),
    Ok("set_device_power", {"device_id": "dev-1", "on": False}, lambda d, s: not _dev(s, "dev-1").on),
    Ok("set_light_brightness", {"device_id": "dev-3", "level": 55},
       lambda d, s: _dev(s, "dev-3").on and _dev(s, "dev-3").brightness == 55),
    Ok("set_light_color", {"device_id": "dev-2", "color": "blue"},
       lambda d, s: _dev(s, "dev-2").color == "blue" and _dev(s, "dev-2").on),
    Ok("set_thermostat", {"device_id": "dev-6", "target_c": 19.5}, lambda d, s: _dev(s, "dev-6").target_c == 19.5
       and _dev(s, "dev-6").mode == "heat"),
    Ok("set_thermostat", {"device_id": "dev-6", "target_c": 22, "mode": "off"},
       lambda d, s: _dev(s, "dev-6").mode == "off" and not _dev(s, "dev-6").on),
    Ok("lock_door", {"device_id": "dev-7"}, lambda d, s: _dev(s, "dev-7").locked,
       setup=lambda s: setattr(_dev(s, "dev-7"), "locked", False)),
    Ok("unlock_door", {"device_id": "dev-7", "pin": "2468"}, lambda d, s: _dev(s, "dev-7").locked is False),
    Ok("set_blinds", {"device_id": "dev-8", "percent_open": 50}, lambda d, s: _dev(s, "dev-8").position == 50),
    Ok("list_scenes", {}, lambda d, s: [x["name"] for x in d] == ["Movie night", "Good night", "Morning"]),
    Ok("activate_scene", {"scene_id": "scene-12"},
       lambda d, s: _dev(s, "dev-1").brightness == 15 and not _dev(s, "dev-2").on and _dev(s, "dev-8").position == 0
       and d["skipped"] == []),
    Ok("activate_scene", {"scene_id": "scene-12"}, lambda d, s: d["skipped"] == ["dev-8"] and d["applied"] == 2,
       setup=lambda s: setattr(_dev(s, "dev-8"), "online", False)),
    Ok("create_scene", {"name": "Cooking", "room": "kitchen"},
       lambda d, s: s.home.scenes[-1].id == "scene-15"
       and [a.device_id for a in s.home.scenes[-1].actions] == ["dev-4", "dev-5", "dev-10"]),
    Ok("delete_scene", {"scene_id": "scene-14"}, lambda d, s: len(s.home.scenes) == 2),
    Ok("set_away_mode", {"enabled": True},
       lambda d, s: s.home.away_mode and not _dev(s, "dev-1").on and not _dev(s, "dev-4").on and _dev(s, "dev-7").locked
       and _dev(s, "dev-11").on is False),
]

FAILURES = [
    Fails("get_home_device", {"device_id": "dev-0"}, "not_found"),
    Fails("set_device_power", {"device_id": "dev-11", "on": True}, "precondition_failed", message="offline"),
    Fails("set_device_power", {"device_id": "dev-7", "on": False}, "invalid_arguments", message="lock"),
    Fails("set_light_brightness", {"device_id": "dev-5", "level": 50}, "invalid_arguments", message="not a light"),
    Fails("set_light_brightness", {"device_id": "dev-1", "level": 0}, "invalid_arguments"),
    Fails("set_light_color", {"device_id": "dev-1", "color": "pink"}, "invalid_arguments"),
    Fails("set_thermostat", {"device_id": "dev-6", "target_c": 35}, "invalid_arguments"),
    Fails("unlock_door", {"device_id": "dev-7", "pin": "1234"}, "permission_denied", message="wrong PIN"),
    Fails("unlock_door", {"device_id": "dev-7", "pin": "2468"}, "precondition_failed", message="away mode",
          setup=lambda s: setattr(s.home, "away_mode", True)),
    Fails("unlock_door", {"device_id": "dev-7", "pin": "24"}, "invalid_arguments"),
    Fails("activate_scene", {"scene_id": "scene-99"}, "not_found"),
    Fails("create_scene", {"name": "Movie Night", "room": "Kitchen"}, "conflict"),
    Fails("create_scene", {"name": "Yard", "room": "Garden"}, "not_found", message="rooms"),
    Fails("delete_scene", {"scene_id": "dev-1"}, "not_found"),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_home_tool_has_a_success() -> None:
    assert_covers("home", SUCCESSES)


async def test_a_saved_scene_brings_the_room_back() -> None:
    phone, ex = fresh()
    scene = (await call(ex, "create_scene", name="Evening", room="Living room")).data["id"]
    saved = [d.model_copy() for d in phone.state.home.devices]
    await call(ex, "set_light_brightness", device_id="dev-1", level=5)
    await call(ex, "set_blinds", device_id="dev-8", percent_open=0)
    assert phone.state.home.devices != saved
    await call(ex, "activate_scene", scene_id=scene)
    assert phone.state.home.devices == saved
