"""The music app: search, playback control, player settings, likes, playlists."""

from __future__ import annotations

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

from pocketpilot.executor.sandbox import PhoneState


def _playing(s: PhoneState, index: int = 0, playing: bool = True) -> None:
    p = s.music.player
    p.queue, p.index, p.playing, p.source = ["track-9", "track-10", "track-3"], index, playing, "playlist-11"


SUCCESSES = [
    Ok("search_music", {"query": "kai vega"}, lambda d, s: [t["id"] for t in d] == ["track-3", "track-4"]),
    Ok("search_music", {"query": "sunward"}, lambda d, s: [t["title"] for t in d] == ["Golden Hour", "Sunward"]),
    Ok("play_track", {"track_id": "track-5"},
       lambda d, s: d["playing"] and d["track"]["title"] == "Golden Hour" and s.music.player.queue == ["track-5"]
       and s.foreground_app == "com.spotify.music" and d["output"] == "Pixel Buds Pro"),
    Ok("play_playlist", {"playlist_id": "playlist-12"},
       lambda d, s: s.music.player.queue == ["track-7", "track-8"] and s.music.player.source == "playlist-12"),
    Ok("play_playlist", {"playlist_id": "playlist-13"},
       lambda d, s: sorted(s.music.player.queue) == ["track-1", "track-2", "track-5", "track-6"]
       and s.music.player.queue != ["track-1", "track-2", "track-5", "track-6"],
       setup=lambda s: setattr(s.music.player, "shuffle", True)),
    Ok("pause_music", {}, lambda d, s: not s.music.player.playing, setup=_playing),
    Ok("resume_music", {}, lambda d, s: s.music.player.playing, setup=lambda s: _playing(s, playing=False)),
    Ok("skip_track", {}, lambda d, s: d["track"]["id"] == "track-10" and d["position"] == "2/3", setup=_playing),
    Ok("skip_track", {"direction": "previous"}, lambda d, s: s.music.player.index == 1,
       setup=lambda s: _playing(s, index=2)),
    Ok("skip_track", {}, lambda d, s: s.music.player.index == 0,
       setup=lambda s: (_playing(s, index=2), setattr(s.music.player, "repeat", "all"))),
    Ok("get_now_playing", {}, lambda d, s: d == {"playing": False, "track": None}),
    Ok("get_now_playing", {}, lambda d, s: d["track"]["id"] == "track-9" and d["output"] == "Phone speaker",
       setup=lambda s: (_playing(s), setattr(s.earbuds, "connected", False))),
    Ok("set_music_volume", {"level": 80}, lambda d, s: s.music.player.volume == 80),
    Ok("set_shuffle", {"enabled": True}, lambda d, s: s.music.player.shuffle),
    Ok("set_repeat", {"mode": "one"}, lambda d, s: s.music.player.repeat == "one"),
    Ok("like_track", {"track_id": "track-1"}, lambda d, s: s.music.tracks[0].liked),
    Ok("list_playlists", {}, lambda d, s: [(p["name"], p["tracks"]) for p in d]
       == [("Workout", 3), ("Focus", 2), ("Road Trip", 4)]),
    Ok("get_playlist", {"playlist_id": "playlist-11"},
       lambda d, s: [t["title"] for t in d["tracks"]] == ["Run the Hills", "Sprint Theory", "Neon Rain"]),
    Ok("create_playlist", {"name": "Chill"}, lambda d, s: s.music.playlists[-1].name == "Chill" and d["id"] == "playlist-14"),
    Ok("add_to_playlist", {"playlist_id": "playlist-12", "track_id": "track-4"},
       lambda d, s: s.music.playlists[1].track_ids == ["track-7", "track-8", "track-4"]),
    Ok("remove_from_playlist", {"playlist_id": "playlist-11", "track_id": "track-3"},
       lambda d, s: s.music.playlists[0].track_ids == ["track-9", "track-10"]),
    Ok("delete_playlist", {"playlist_id": "playlist-11"},
       lambda d, s: [p.id for p in s.music.playlists] == ["playlist-12", "playlist-13"]
       and s.music.player.source is None and s.music.player.queue, setup=_playing),
]

FAILURES = [
    Fails("play_track", {"track_id": "track-99"}, "not_found"),
    Fails("play_playlist", {"playlist_id": "playlist-12"}, "precondition_failed", message="empty",
          setup=lambda s: setattr(s.music.playlists[1], "track_ids", [])),
    Fails("pause_music", {}, "precondition_failed", message="nothing"),
    Fails("resume_music", {}, "precondition_failed"),
    Fails("skip_track", {}, "precondition_failed", message="no next", setup=lambda s: _playing(s, index=2)),
    Fails("skip_track", {"direction": "sideways"}, "invalid_arguments", setup=_playing),
    Fails("set_music_volume", {"level": 101}, "invalid_arguments"),
    Fails("set_repeat", {"mode": "twice"}, "invalid_arguments"),
    Fails("create_playlist", {"name": "focus"}, "conflict"),
    Fails("add_to_playlist", {"playlist_id": "playlist-11", "track_id": "track-9"}, "conflict"),
    Fails("remove_from_playlist", {"playlist_id": "playlist-11", "track_id": "track-1"}, "not_found"),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_music_tool_has_a_success() -> None:
    assert_covers("music", SUCCESSES)


async def test_shuffle_is_deterministic_and_only_for_later_playlists() -> None:
    async def queue() -> list[str]:
        phone, ex = fresh()
        await call(ex, "play_playlist", playlist_id="playlist-13")
        plain = list(phone.state.music.player.queue)
        await call(ex, "set_shuffle", enabled=True)
        assert phone.state.music.player.queue == plain  # the running queue is left alone
        await call(ex, "play_playlist", playlist_id="playlist-13")
        return phone.state.music.player.queue

    assert await queue() == await queue()
