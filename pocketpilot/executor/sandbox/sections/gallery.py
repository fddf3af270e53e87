"""The camera and gallery: camera settings, photos and videos, albums, shares."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import Field

from ._base import Section

__all__ = ["Album", "CameraSettings", "FlashMode", "GalleryState", "MediaItem", "MediaShare", "default_gallery"]

FlashMode = Literal["auto", "on", "off"]


class MediaItem(Section):
    """A photo or video; ``name`` is its file name."""

    id: str
    name: str
    kind: Literal["photo", "video"]
    taken_at: datetime
    place: str = ""
    size_kb: Annotated[int, Field(ge=0)]
    duration_s: Annotated[int, Field(ge=1)] | None = None
    favorite: bool = False
    album_ids: list[str] = Field(default_factory=list)


class Album(Section):
    """A user album."""

    id: str
    name: str


class MediaShare(Section):
    """A photo or video sent to a contact (``name`` is the contact)."""

    id: str
    media_id: str
    name: str
    at: datetime


class CameraSettings(Section):
    """What the next shot uses."""

    flash: FlashMode = "auto"
    timer_s: Literal[0, 3, 10] = 0
    location_tags: bool = True


class GalleryState(Section):
    """Camera settings, the media library and albums."""

    camera: CameraSettings = Field(default_factory=CameraSettings)
    items: list[MediaItem] = Field(default_factory=list)
    albums: list[Album] = Field(default_factory=list)
    shares: list[MediaShare] = Field(default_factory=list)
    next_id: int = 1


_MEDIA = [
    # name, kind, days ago, place, kb, seconds, favorite, albums
    ("IMG_0412.jpg", "photo", 0, "Corner Bean Cafe", 3_100, None, False, []),
    ("IMG_0409.jpg", "photo", 1, "Riverside Park", 2_900, None, True, ["album-1"]),
    ("VID_0410.mp4", "video", 1, "Riverside Park", 84_000, 42, False, ["album-1"]),
    ("IMG_0398.jpg", "photo", 6, "Museum of Light", 3_400, None, False, []),
    ("IMG_0377.jpg", "photo", 12, "Home", 2_700, None, True, ["album-2"]),
    ("IMG_0350.jpg", "photo", 30, "Trattoria Sole", 3_000, None, False, ["album-2"]),
]


def default_gallery(now: datetime) -> GalleryState:
    """Six shots of the last month in two albums; flash on auto."""
    items = [
        MediaItem(id=f"media-{i}", name=n, kind=k, taken_at=now - timedelta(days=d, hours=2), place=p, size_kb=kb,  # type: ignore[arg-type]
                  duration_s=s, favorite=fav, album_ids=al)
        for i, (n, k, d, p, kb, s, fav, al) in enumerate(_MEDIA, start=3)
    ]
    return GalleryState(
        items=items,
        albums=[Album(id="album-1", name="Spring walks"), Album(id="album-2", name="Family")],
        next_id=9,
    )
