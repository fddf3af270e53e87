"""The music player: a track library, playlists and the player's state."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ._base import Section

__all__ = ["MusicState", "Player", "Playlist", "RepeatMode", "Track", "default_music"]

RepeatMode = Literal["off", "one", "all"]


class Track(Section):
    """A song; ``name`` is its title."""

    id: str
    name: str
    artist: str
    album: str
    duration_s: Annotated[int, Field(ge=1)]
    liked: bool = False


class Playlist(Section):
    """An ordered list of track ids."""

    id: str
    name: str
    track_ids: list[str] = Field(default_factory=list)


class Player(Section):
    """What is playing: the queue (track ids) and the position in it."""

    queue: list[str] = Field(default_factory=list)
    index: Annotated[int, Field(ge=0)] = 0
    playing: bool = False
    source: str | None = None
    """The playlist id the queue came from, if any."""
    volume: Annotated[int, Field(ge=0, le=100)] = 50
    shuffle: bool = False
    repeat: RepeatMode = "off"


class MusicState(Section):
    """Library, playlists and player."""

    tracks: list[Track] = Field(default_factory=list)
    playlists: list[Playlist] = Field(default_factory=list)
    player: Player = Field(default_factory=Player)
    next_id: int = 1


_TRACKS = [
    ("Morning Tide", "The Lanterns", "Harbor Lights", 214),
    ("Paper Planes Home", "The Lanterns", "Harbor Lights", 189),
    ("Neon Rain", "Kai Vega", "City After Dark", 242),
    ("Slow Trains", "Kai Vega", "City After Dark", 275),
    ("Golden Hour", "Mira Sol", "Sunward", 201),
    ("Sunward", "Mira Sol", "Sunward", 233),
    ("Deep Focus I", "Quiet Rooms", "Study Sessions", 600),
    ("Deep Focus II", "Quiet Rooms", "Study Sessions", 540),
    ("Run the Hills", "Pulse Unit", "Tempo", 180),
    ("Sprint Theory", "Pulse Unit", "Tempo", 167),
]


def default_music() -> MusicState:
    """Ten tracks by five artists, three playlists, the player paused on nothing."""
    tracks = [Track(id=f"track-{i}", name=n, artist=a, album=al, duration_s=d)
              for i, (n, a, al, d) in enumerate(_TRACKS, start=1)]
    tracks[4].liked = tracks[2].liked = True
    return MusicState(
        tracks=tracks,
        playlists=[
            Playlist(id="playlist-11", name="Workout", track_ids=["track-9", "track-10", "track-3"]),
            Playlist(id="playlist-12", name="Focus", track_ids=["track-7", "track-8"]),
            Playlist(id="playlist-13", name="Road Trip", track_ids=["track-1", "track-2", "track-5", "track-6"]),
        ],
        next_id=14,
    )
