"""The maps app: places, directions, navigation, saved places, location sharing."""

from __future__ import annotations

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

from pocketpilot.executor.sandbox import PhoneState
from pocketpilot.executor.sandbox.sections.maps import LocationShare


def _navigating(s: PhoneState) -> None:
    nav = s.maps.navigation
    nav.active, nav.destination_id, nav.mode, nav.started_at = True, "place-11", "walk", s.now


SUCCESSES = [
    Ok("search_places", {"category": "pharmacy"}, lambda d, s: [p["id"] for p in d] == ["place-4", "place-5"]),
    Ok("search_places", {"query": "main st", "limit": 1}, lambda d, s: [p["id"] for p in d] == ["place-4"]),
    # 09:30: the cafe (07-18) is open, the bistro (11:30-) is not
    Ok("search_places", {"category": "restaurant", "open_now": True}, lambda d, s: d == []),
    Ok("search_places", {"category": "cafe", "open_now": True}, lambda d, s: d[0]["open_now"] and d[0]["id"] == "place-1"),
    Ok("get_place", {"place_id": "place-9"}, lambda d, s: d["hours"] == "10:00-18:00" and not d["open_now"]),
    Ok("get_directions", {"place_id": "place-12", "mode": "drive"},  # 30 km/h in town: 2 minutes a km
       lambda d, s: d["to"] == "City Airport" and abs(d["minutes"] - d["distance_km"] * 2) <= 1),
    Ok("get_directions", {"place_id": "place-14", "mode": "walk", "from_place_id": "place-13"},
       lambda d, s: d["to"] == "Home" and d["minutes"] == round(d["distance_km"] / 5 * 60)),
    Ok("start_navigation", {"place_id": "place-11", "mode": "transit"},
       lambda d, s: s.maps.navigation.destination_id == "place-11" and s.maps.navigation.mode == "transit"
       and s.foreground_app == "com.google.android.apps.maps"),
    Ok("stop_navigation", {}, lambda d, s: not s.maps.navigation.active and d["stopped"] == "place-11",
       setup=_navigating),
    Ok("get_navigation_status", {}, lambda d, s: d["navigating"] and d["to"] == "Central Station"
       and d["minutes_left"] > 10, setup=_navigating),
    Ok("get_navigation_status", {}, lambda d, s: d == {"navigating": False}),
    Ok("save_place", {"place_id": "place-3", "label": "Pizza"},
       lambda d, s: s.maps.saved[-1].name == "Pizza" and d["id"] == "saved-16"),
    Ok("save_place", {"place_id": "place-8"}, lambda d, s: s.maps.saved[-1].name == "Riverside Park"),
    Ok("list_saved_places", {}, lambda d, s: [r["name"] for r in d] == ["Morning coffee", "home", "work"]),
    Ok("remove_saved_place", {"saved_id": "saved-15"}, lambda d, s: s.maps.saved == []),
    Ok("set_home_address", {"place_id": "place-6"}, lambda d, s: s.maps.home_place_id == "place-6"),
    Ok("set_work_address", {"place_id": "place-9"}, lambda d, s: s.maps.work_place_id == "place-9"),
    Ok("share_location", {"contact": "Mom", "minutes": 30},
       lambda d, s: s.maps.shares[0].name == "Dana Lee" and (s.maps.shares[0].until - s.now).seconds == 1800),
    Ok("stop_sharing_location", {"share_id": "share-16"}, lambda d, s: not s.maps.shares[0].active,
       setup=lambda s: setattr(s.maps, "shares", [LocationShare(id="share-16", name="Bob Martin", until=s.now)])),
]

FAILURES = [
    Fails("get_place", {"place_id": "place-99"}, "not_found"),
    Fails("get_directions", {"place_id": "place-1", "mode": "teleport"}, "invalid_arguments"),
    Fails("get_directions", {"place_id": "place-1", "from_place_id": "nowhere"}, "not_found"),
    Fails("stop_navigation", {}, "precondition_failed", message="no navigation"),
    Fails("save_place", {"place_id": "place-1"}, "conflict", message="already saved"),
    Fails("remove_saved_place", {"saved_id": "place-1"}, "not_found"),
    Fails("set_home_address", {"place_id": "x"}, "not_found"),
    Fails("share_location", {"contact": "Nobody"}, "not_found"),
    Fails("share_location", {"contact": "Bob", "minutes": 5}, "invalid_arguments"),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_maps_tool_has_a_success() -> None:
    assert_covers("maps", SUCCESSES)


async def test_nearest_is_first_and_modes_rank_by_speed() -> None:
    _, ex = fresh()
    found = (await call(ex, "search_places")).data
    distances = [p["distance_km"] for p in found]
    assert distances == sorted(distances)
    minutes = {m: (await call(ex, "get_directions", place_id="place-13", mode=m)).data["minutes"]
               for m in ("walk", "bike", "transit", "drive")}
    assert minutes["walk"] > minutes["transit"] > minutes["drive"] and minutes["walk"] > minutes["bike"] > minutes["drive"]


async def test_sharing_twice_with_the_same_person_conflicts_until_stopped() -> None:
    phone, ex = fresh()
    share = (await call(ex, "share_location", contact="Bob")).data["id"]
    assert (await call(ex, "share_location", contact="Bobby")).error.code == "conflict"
    assert (await call(ex, "stop_sharing_location", share_id=share)).ok
    assert (await call(ex, "share_location", contact="Bob")).ok
