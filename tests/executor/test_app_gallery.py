"""The gallery app: camera settings and capture, albums, favorites, delete and share."""

from __future__ import annotations

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

SUCCESSES = [
    Ok("take_photo", {"mode": "night"},
       lambda d, s: s.gallery.items[-1].name == "IMG_1009.jpg" and s.gallery.items[-1].size_kb == 4200
       and d["place"] == "Corner Bean Cafe" and s.foreground_app == "com.google.android.GoogleCamera"),
    Ok("take_photo", {}, lambda d, s: d["place"] == "", setup=lambda s: setattr(s.gallery.camera, "location_tags", False)),
    Ok("record_video", {"seconds": 10},
       lambda d, s: s.gallery.items[-1].kind == "video" and s.gallery.items[-1].duration_s == 10
       and d["name"].startswith("VID_")),
    Ok("set_flash", {"mode": "off"}, lambda d, s: s.gallery.camera.flash == "off"),
    Ok("set_camera_timer", {"seconds": 10}, lambda d, s: s.gallery.camera.timer_s == 10),
    Ok("set_location_tags", {"enabled": False}, lambda d, s: not s.gallery.camera.location_tags),
    Ok("list_photos", {"limit": 2}, lambda d, s: [m["id"] for m in d] == ["media-3", "media-4"]),
    Ok("list_photos", {"favorites_only": True}, lambda d, s: [m["id"] for m in d] == ["media-4", "media-7"]),
    Ok("list_photos", {"album_id": "album-1", "kind": "video"}, lambda d, s: [m["id"] for m in d] == ["media-5"]),
    Ok("get_photo", {"media_id": "media-5"}, lambda d, s: d["duration_s"] == 42 and d["size_kb"] == 84000),
    Ok("list_albums", {}, lambda d, s: [(a["name"], a["count"]) for a in d] == [("Spring walks", 2), ("Family", 2)]),
    Ok("create_album", {"name": "Food"}, lambda d, s: s.gallery.albums[-1].name == "Food" and d["id"] == "album-9"),
    Ok("add_to_album", {"media_id": "media-8", "album_id": "album-1"},
       lambda d, s: s.gallery.items[5].album_ids == ["album-2", "album-1"]),
    Ok("remove_from_album", {"media_id": "media-7", "album_id": "album-2"}, lambda d, s: s.gallery.items[4].album_ids == []),
    Ok("set_favorite", {"media_id": "media-3"}, lambda d, s: s.gallery.items[0].favorite),
    Ok("delete_photo", {"media_id": "media-3"}, lambda d, s: "media-3" not in {m.id for m in s.gallery.items}),
    Ok("delete_album", {"album_id": "album-2"},
       lambda d, s: [a.id for a in s.gallery.albums] == ["album-1"] and len(s.gallery.items) == 6
       and all("album-2" not in m.album_ids for m in s.gallery.items)),
    Ok("share_photo", {"media_id": "media-4", "contact": "Mom"}, lambda d, s: s.gallery.shares[0].name == "Dana Lee"),
]

FAILURES = [
    Fails("take_photo", {"mode": "panorama"}, "invalid_arguments"),
    Fails("take_photo", {}, "precondition_failed", message="storage", setup=lambda s: setattr(s.files, "capacity_mb", 11_200)),
    Fails("record_video", {"seconds": 0}, "invalid_arguments"),
    Fails("set_camera_timer", {"seconds": 5}, "invalid_arguments"),
    Fails("list_photos", {"album_id": "album-7"}, "not_found"),
    Fails("create_album", {"name": "family"}, "conflict"),
    Fails("add_to_album", {"media_id": "media-3", "album_id": "album-9"}, "not_found"),
    Fails("remove_from_album", {"media_id": "media-3", "album_id": "album-1"}, "not_found", message="not in"),
    Fails("delete_photo", {"media_id": "IMG_0412.jpg"}, "not_found"),
    Fails("share_photo", {"media_id": "media-4", "contact": "Nobody"}, "not_found"),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_gallery_tool_has_a_success() -> None:
    assert_covers("gallery", SUCCESSES)


async def test_a_photo_takes_the_settings_of_its_moment() -> None:
    _, ex = fresh()
    await call(ex, "set_flash", mode="on")
    await call(ex, "set_camera_timer", seconds=3)
    shot = (await call(ex, "take_photo")).data
    assert (shot["flash"], shot["timer_s"]) == ("on", 3)
    newest = (await call(ex, "list_photos", limit=1)).data[0]
    assert newest["id"] == shot["id"]
