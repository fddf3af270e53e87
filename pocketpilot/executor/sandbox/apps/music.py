"""The music player: search the library, control playback, keep playlists."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..sections.music import Playlist, RepeatMode, Track
from ._base import App
from ._records import find, issue_id

__all__ = ["MusicApp"]

MUSIC_PACKAGE = "com.spotify.music"


def _track(t: Track) -> dict[str, Any]:
    return {"id": t.id, "title": t.name, "artist": t.artist, "album": t.album, "duration_s": t.duration_s,
            "liked": t.liked}


class MusicApp(App):
    """Play music and manage playlists."""

    name = "music"
    domain = "music"
    section = "music"
    package = "com.spotify.music"
    label = "Spotify"

    def _track(self, track_id: str) -> Track:
        return find(self.state.music.tracks, track_id, "track")

    def _playlist(self, playlist_id: str) -> Playlist:
        return find(self.state.music.playlists, playlist_id, "playlist")

    def _now(self) -> dict[str, Any]:
        state = self.state
        player = state.music.player
        if not player.queue:
            return {"playing": False, "track": None}
        output = state.earbuds.name if state.earbuds.connected else "Phone speaker"
        return {"playing": player.playing, "track": _track(self._track(player.queue[player.index])),
                "position": f"{player.index + 1}/{len(player.queue)}", "source": player.source,
                "volume": player.volume, "shuffle": player.shuffle, "repeat": player.repeat, "output": output}

    def _start(self, queue: list[str], source: str | None) -> dict[str, Any]:
        state = self.state
        player = state.music.player
        player.queue, player.index, player.playing, player.source = queue, 0, True, source
        state.foreground_app = MUSIC_PACKAGE
        return self._now()

    @tool(effect="read", idempotent=True)
    async def search_music(
        self, query: str = Field(min_length=1, max_length=80, description="Words in a title, artist or album.")
    ) -> list[dict[str, Any]]:
        """Find tracks by title, artist or album, to get the track id playback tools take.

        Args:
            query: Words in a title, artist or album.
        """
        q = query.strip().lower()
        return [_track(t) for t in self.state.music.tracks
                if q in t.name.lower() or q in t.artist.lower() or q in t.album.lower()]

    @tool(effect="update", id_arg="track_id", idempotent=True)
    async def play_track(self, track_id: str = Field(description="The track id, e.g. track-3.")) -> dict[str, Any]:
        """Play one track now (it replaces the queue).

        Args:
            track_id: The track id, e.g. track-3.
        """
        return self._start([self._track(track_id).id], None)

    @tool(effect="update", id_arg="playlist_id", idempotent=True)
    async def play_playlist(self, playlist_id: str = Field(description="The playlist id.")) -> dict[str, Any]:
        """Play a playlist from its first track (shuffled if shuffle is on).

        Args:
            playlist_id: The playlist id.
        """
        music = self.state.music
        playlist = self._playlist(playlist_id)
        if not playlist.track_ids:
            raise ToolFailure("precondition_failed", f"{playlist.name} is empty")
        queue = list(playlist.track_ids)
        if music.player.shuffle:
            queue = sorted(queue, key=_shuffle_rank)
        return self._start(queue, playlist.id)

    @tool(effect="update", idempotent=True)
    async def pause_music(self) -> dict[str, Any]:
        """Pause playback (resume_music continues where it stopped)."""
        player = self.state.music.player
        if not player.queue:
            raise ToolFailure("precondition_failed", "nothing is playing")
        player.playing = False
        return self._now()

    @tool(effect="update", idempotent=True)
    async def resume_music(self) -> dict[str, Any]:
        """Resume the paused track."""
        player = self.state.music.player
        if not player.queue:
            raise ToolFailure("precondition_failed", "nothing to resume; play a track or playlist first")
        player.playing = True
        return self._now()

    @tool(effect="update", idempotent=False)
    async def skip_track(self, direction: Literal["next", "previous"] = "next") -> dict[str, Any]:
        """Go to the next or previous track of the queue (repeat all wraps around).

        Args:
            direction: next or previous.
        """
        player = self.state.music.player
        if not player.queue:
            raise ToolFailure("precondition_failed", "nothing is playing")
        step = 1 if direction == "next" else -1
        target = player.index + step
        if not 0 <= target < len(player.queue):
            if player.repeat != "all":
                raise ToolFailure("precondition_failed", f"no {direction} track in the queue")
            target %= len(player.queue)
        player.index, player.playing = target, True
        return self._now()

    @tool(effect="read", idempotent=True)
    async def get_now_playing(self) -> dict[str, Any]:
        """Read the current track, whether it plays, the queue position, volume and output device."""
        return self._now()

    @tool(effect="setting", setting="music_volume", idempotent=True)
    async def set_music_volume(
        self, level: int = Field(ge=0, le=100, description="Music volume from 0 to 100.")
    ) -> dict[str, Any]:
        """Set the music playback volume in percent.

        Args:
            level: Music volume from 0 to 100.
        """
        self.state.music.player.volume = level
        return {"volume": level}

    @tool(effect="setting", setting="shuffle", idempotent=True)
    async def set_shuffle(self, enabled: bool) -> dict[str, Any]:
        """Turn shuffle play on or off for playlists started from now on.

        Args:
            enabled: True to shuffle.
        """
        self.state.music.player.shuffle = enabled
        return {"shuffle": enabled}

    @tool(effect="setting", setting="repeat", idempotent=True)
    async def set_repeat(self, mode: RepeatMode) -> dict[str, Any]:
        """Set repeat: off, one (the current track) or all (the whole queue).

        Args:
            mode: off, one or all.
        """
        self.state.music.player.repeat = mode
        return {"repeat": mode}

    @tool(effect="update", id_arg="track_id", idempotent=True)
    async def like_track(self, track_id: str = Field(description="The track id."), liked: bool = True) -> dict[str, Any]:
        """Like a track (or unlike it) so it shows in liked songs.

        Args:
            track_id: The track id.
            liked: False unlikes it.
        """
        track = self._track(track_id)
        track.liked = liked
        return {"id": track.id, "liked": liked}

    @tool(effect="read", idempotent=True)
    async def list_playlists(self) -> list[dict[str, Any]]:
        """List playlists with their track counts."""
        return [{"id": p.id, "name": p.name, "tracks": len(p.track_ids)} for p in self.state.music.playlists]

    @tool(effect="read", id_arg="playlist_id", idempotent=True)
    async def get_playlist(self, playlist_id: str = Field(description="The playlist id.")) -> dict[str, Any]:
        """Read a playlist's tracks in order.

        Args:
            playlist_id: The playlist id.
        """
        playlist = self._playlist(playlist_id)
        return {"id": playlist.id, "name": playlist.name,
                "tracks": [_track(self._track(t)) for t in playlist.track_ids]}

    @tool(effect="create", name_arg="name", idempotent=False)
    async def create_playlist(
        self, name: str = Field(min_length=1, max_length=60, description="The playlist's name.")
    ) -> dict[str, Any]:
        """Create an empty playlist.

        Args:
            name: The playlist's name.
        """
        music = self.state.music
        if any(p.name.lower() == name.strip().lower() for p in music.playlists):
            raise ToolFailure("conflict", f"a playlist named {name!r} already exists")
        playlist = Playlist(id=issue_id(music, "playlist"), name=name.strip())
        music.playlists = [*music.playlists, playlist]
        return playlist.model_dump()

    @tool(effect="update", id_arg="playlist_id", idempotent=False)
    async def add_to_playlist(
        self, playlist_id: str = Field(description="The playlist id."), track_id: str = Field(description="The track id.")
    ) -> dict[str, Any]:
        """Append a track to a playlist.

        Args:
            playlist_id: The playlist id.
            track_id: The track id.
        """
        playlist, track = self._playlist(playlist_id), self._track(track_id)
        if track.id in playlist.track_ids:
            raise ToolFailure("conflict", f"{track.name} is already in {playlist.name}")
        playlist.track_ids = [*playlist.track_ids, track.id]
        return {"id": playlist.id, "tracks": len(playlist.track_ids)}

    @tool(effect="update", id_arg="playlist_id", idempotent=True)
    async def remove_from_playlist(
        self, playlist_id: str = Field(description="The playlist id."), track_id: str = Field(description="The track id.")
    ) -> dict[str, Any]:
        """Take a track out of a playlist (it stays in the library).

        Args:
            playlist_id: The playlist id.
            track_id: The track id.
        """
        playlist = self._playlist(playlist_id)
        if track_id not in playlist.track_ids:
            raise ToolFailure("not_found", f"{track_id} is not in {playlist.name}")
        playlist.track_ids = [t for t in playlist.track_ids if t != track_id]
        return {"id": playlist.id, "tracks": len(playlist.track_ids)}

    @tool(effect="delete", destructive=True, id_arg="playlist_id", idempotent=True)
    async def delete_playlist(self, playlist_id: str = Field(description="The playlist id.")) -> dict[str, Any]:
        """Delete a playlist (its tracks stay in the library).

        Args:
            playlist_id: The playlist id.
        """
        music = self.state.music
        playlist = self._playlist(playlist_id)
        music.playlists = [p for p in music.playlists if p.id != playlist.id]
        if music.player.source == playlist.id:
            music.player.source = None
        return {"deleted": playlist.id}


def _shuffle_rank(track_id: str) -> str:
    """A fixed pseudo-random rank per track: shuffle stays deterministic across runs and seeds."""
    return hashlib.sha256(track_id.encode()).hexdigest()
