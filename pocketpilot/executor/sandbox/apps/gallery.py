"""Camera and gallery: take photos and videos, organize them in albums, share them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..sections.gallery import Album, FlashMode, MediaItem, MediaShare
from ._base import App
from ._records import find, issue_id
from .contacts import resolve_contact
from .files import used_kb

__all__ = ["GalleryApp"]

_PHOTO_KB = {"photo": 3_000, "portrait": 3_600, "night": 4_200}
_VIDEO_KB_PER_S = 2_000


def _media(m: MediaItem) -> dict[str, Any]:
    return {"id": m.id, "name": m.name, "kind": m.kind, "taken_at": m.taken_at.isoformat(), "place": m.place,
            "favorite": m.favorite, "albums": m.album_ids, **({"duration_s": m.duration_s} if m.duration_s else {})}


class GalleryApp(App):
    """The camera and the photo library."""

    name = "gallery"
    domain = "files_media"
    section = "gallery"
    package = "com.google.android.apps.photos"
    label = "Photos"

    def _item(self, media_id: str) -> MediaItem:
        return find(self.state.gallery.items, media_id, "photo or video")

    def _album(self, album_id: str) -> Album:
        return find(self.state.gallery.albums, album_id, "album")

    def _capture(self, kind: Literal["photo", "video"], size_kb: int, duration_s: int | None) -> MediaItem:
        state = self.state
        if used_kb(state) + size_kb > state.files.capacity_mb * 1000:
            raise ToolFailure("precondition_failed", "storage is full; free space in the files app first")
        gallery = state.gallery
        number = gallery.next_id
        place = ""
        if gallery.camera.location_tags:
            maps = state.maps
            here = min(maps.places, key=lambda p: (p.lat - maps.lat) ** 2 + (p.lon - maps.lon) ** 2, default=None)
            place = here.name if here is not None else ""
        ext = "jpg" if kind == "photo" else "mp4"
        item = MediaItem(id=issue_id(gallery, "media"), name=f"{'IMG' if kind == 'photo' else 'VID'}_{1000 + number}.{ext}",
                         kind=kind, taken_at=state.now, place=place, size_kb=size_kb, duration_s=duration_s)
        gallery.items = [*gallery.items, item]
        state.foreground_app = "com.google.android.GoogleCamera"
        return item

    @tool(effect="create", idempotent=False)
    async def take_photo(self, mode: Literal["photo", "portrait", "night"] = "photo") -> dict[str, Any]:
        """Take a photo now with the current flash and timer settings; it lands in the gallery.

        Args:
            mode: photo, portrait (blurred background) or night (low light).
        """
        item = self._capture("photo", _PHOTO_KB[mode], None)
        camera = self.state.gallery.camera
        return {**_media(item), "mode": mode, "flash": camera.flash, "timer_s": camera.timer_s}

    @tool(effect="create", idempotent=False)
    async def record_video(
        self, seconds: int = Field(ge=1, le=600, description="Length of the clip in seconds.")
    ) -> dict[str, Any]:
        """Record a video clip of the given length.

        Args:
            seconds: Length of the clip in seconds.
        """
        return _media(self._capture("video", seconds * _VIDEO_KB_PER_S, seconds))

    @tool(effect="setting", setting="flash", idempotent=True)
    async def set_flash(self, mode: FlashMode) -> dict[str, Any]:
        """Set the camera flash: auto, on or off.

        Args:
            mode: auto, on or off.
        """
        self.state.gallery.camera.flash = mode
        return {"flash": mode}

    @tool(effect="setting", setting="camera_timer", idempotent=True)
    async def set_camera_timer(self, seconds: Literal[0, 3, 10]) -> dict[str, Any]:
        """Set the camera self-timer delay: 0 (off), 3 or 10 seconds.

        Args:
            seconds: 0, 3 or 10.
        """
        self.state.gallery.camera.timer_s = seconds
        return {"timer_s": seconds}

    @tool(effect="setting", setting="location_tags", idempotent=True)
    async def set_location_tags(self, enabled: bool) -> dict[str, Any]:
        """Turn location tagging of new photos and videos on or off.

        Args:
            enabled: True to tag new shots with the place they were taken.
        """
        self.state.gallery.camera.location_tags = enabled
        return {"location_tags": enabled}

    @tool(effect="read", idempotent=True)
    async def list_photos(
        self,
        album_id: str | None = Field(None, description="Only this album."),
        favorites_only: bool = False,
        kind: Literal["photo", "video"] | None = None,
        limit: int = Field(20, ge=1, le=100, description="Most items to return."),
    ) -> list[dict[str, Any]]:
        """List photos and videos, newest first.

        Args:
            album_id: Only this album.
            favorites_only: Only favorites.
            kind: Only photos or only videos.
            limit: Most items to return.
        """
        if album_id is not None:
            self._album(album_id)
        items = [m for m in self.state.gallery.items
                 if (album_id is None or album_id in m.album_ids) and (m.favorite or not favorites_only)
                 and kind in (None, m.kind)]
        return [_media(m) for m in sorted(items, key=lambda m: m.taken_at, reverse=True)[:limit]]

    @tool(effect="read", id_arg="media_id", idempotent=True)
    async def get_photo(self, media_id: str = Field(description="The photo or video id, e.g. media-3.")) -> dict[str, Any]:
        """Read one photo's or video's details (when, where, size, albums).

        Args:
            media_id: The photo or video id, e.g. media-3.
        """
        item = self._item(media_id)
        return {**_media(item), "size_kb": item.size_kb}

    @tool(effect="read", idempotent=True)
    async def list_albums(self) -> list[dict[str, Any]]:
        """List albums with how many items each holds."""
        gallery = self.state.gallery
        return [{**a.model_dump(), "count": sum(a.id in m.album_ids for m in gallery.items)} for a in gallery.albums]

    @tool(effect="create", name_arg="name", idempotent=False)
    async def create_album(
        self, name: str = Field(min_length=1, max_length=60, description="The album's name.")
    ) -> dict[str, Any]:
        """Create an empty album.

        Args:
            name: The album's name.
        """
        gallery = self.state.gallery
        if any(a.name.lower() == name.strip().lower() for a in gallery.albums):
            raise ToolFailure("conflict", f"an album named {name!r} already exists")
        album = Album(id=issue_id(gallery, "album"), name=name.strip())
        gallery.albums = [*gallery.albums, album]
        return album.model_dump()

    @tool(effect="update", id_arg="media_id", idempotent=True)
    async def add_to_album(
        self, media_id: str = Field(description="The photo or video id."), album_id: str = Field(description="The album id.")
    ) -> dict[str, Any]:
        """Put a photo or video into an album (it stays in any others).

        Args:
            media_id: The photo or video id.
            album_id: The album id.
        """
        item, album = self._item(media_id), self._album(album_id)
        if album.id not in item.album_ids:
            item.album_ids = [*item.album_ids, album.id]
        return {"id": item.id, "albums": item.album_ids}

    @tool(effect="update", id_arg="media_id", idempotent=True)
    async def remove_from_album(
        self, media_id: str = Field(description="The photo or video id."), album_id: str = Field(description="The album id.")
    ) -> dict[str, Any]:
        """Take a photo or video out of an album (it stays in the library).

        Args:
            media_id: The photo or video id.
            album_id: The album id.
        """
        item, album = self._item(media_id), self._album(album_id)
        if album.id not in item.album_ids:
            raise ToolFailure("not_found", f"{item.name} is not in {album.name}")
        item.album_ids = [a for a in item.album_ids if a != album.id]
        return {"id": item.id, "albums": item.album_ids}

    @tool(effect="update", id_arg="media_id", idempotent=True)
    async def set_favorite(
        self, media_id: str = Field(description="The photo or video id."), favorite: bool = True
    ) -> dict[str, Any]:
        """Mark a photo or video as a favorite, or unmark it.

        Args:
            media_id: The photo or video id.
            favorite: False unmarks it.
        """
        item = self._item(media_id)
        item.favorite = favorite
        return {"id": item.id, "favorite": favorite}

    @tool(effect="delete", destructive=True, id_arg="media_id", idempotent=True)
    async def delete_photo(self, media_id: str = Field(description="The photo or video id.")) -> dict[str, Any]:
        """Delete a photo or video from the phone for good.

        Args:
            media_id: The photo or video id.
        """
        gallery = self.state.gallery
        item = self._item(media_id)
        gallery.items = [m for m in gallery.items if m.id != item.id]
        return {"deleted": item.id}

    @tool(effect="delete", destructive=True, id_arg="album_id", idempotent=True)
    async def delete_album(self, album_id: str = Field(description="The album id.")) -> dict[str, Any]:
        """Delete an album; its photos stay in the library.

        Args:
            album_id: The album id.
        """
        gallery = self.state.gallery
        album = self._album(album_id)
        for m in gallery.items:
            if album.id in m.album_ids:
                m.album_ids = [a for a in m.album_ids if a != album.id]
        gallery.albums = [a for a in gallery.albums if a.id != album.id]
        return {"deleted": album.id}

    @tool(effect="send", open_world=True, id_arg="media_id", idempotent=False)
    async def share_photo(
        self,
        media_id: str = Field(description="The photo or video id."),
        contact: str = Field(min_length=1, max_length=80, description="Contact name or nickname."),
    ) -> dict[str, Any]:
        """Send a photo or video to a contact.

        Args:
            media_id: The photo or video id.
            contact: Contact name or nickname.
        """
        state = self.state
        item = self._item(media_id)
        person = resolve_contact(state, contact)
        share = MediaShare(id=issue_id(state.gallery, "mshare"), media_id=item.id, name=person.name, at=state.now)
        state.gallery.shares = [*state.gallery.shares, share]
        return {"id": share.id, "media": item.name, "to": person.name}
