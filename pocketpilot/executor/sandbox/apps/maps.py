"""Maps: find places, route to them, bookmark them, share where you are."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..sections.maps import LocationShare, Place, PlaceCategory, SavedPlace, TravelMode
from ._base import App
from ._records import find, issue_id
from .contacts import resolve_contact

__all__ = ["MapsApp", "distance_km"]

_SPEED_KMH = {"walk": 5.0, "bike": 15.0, "drive": 30.0, "transit": 22.0}
_TRANSIT_WAIT_MIN = 5


def distance_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance, so routes and "nearest" agree with the seeded coordinates."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 6371.0 * 2 * math.asin(math.sqrt(a))


class MapsApp(App):
    """Places, directions, navigation, saved places and live location sharing."""

    name = "maps"
    domain = "maps_navigation"
    section = "maps"
    package = "com.google.android.apps.maps"
    label = "Maps"

    def _place(self, place_id: str) -> Place:
        return find(self.state.maps.places, place_id, "place")

    def _view(self, p: Place) -> dict[str, Any]:
        maps = self.state.maps
        now = self.state.now.strftime("%H:%M")
        return {
            "id": p.id, "name": p.name, "category": p.category, "address": p.address, "rating": p.rating,
            "open_now": p.opens <= now <= p.closes, "hours": f"{p.opens}-{p.closes}",
            "distance_km": round(distance_km(maps.lat, maps.lon, p.lat, p.lon), 2),
        }

    @tool(effect="read", idempotent=True)
    async def search_places(
        self,
        query: str = Field("", max_length=80, description="Words in the name or address; empty for any."),
        category: PlaceCategory | None = None,
        open_now: bool = False,
        limit: int = Field(5, ge=1, le=20, description="Most places to return."),
    ) -> list[dict[str, Any]]:
        """Find places by name, address or category, nearest first, to get the place id other tools take.

        Args:
            query: Words in the name or address; empty for any.
            category: Only this kind of place.
            open_now: Only places open at the current time.
            limit: Most places to return.
        """
        q = query.strip().lower()
        rows = [
            self._view(p) for p in self.state.maps.places
            if (not q or q in p.name.lower() or q in p.address.lower()) and category in (None, p.category)
        ]
        rows = [r for r in rows if r["open_now"] or not open_now]
        return sorted(rows, key=lambda r: r["distance_km"])[:limit]

    @tool(effect="read", id_arg="place_id", idempotent=True)
    async def get_place(self, place_id: str = Field(description="The place id, e.g. place-3.")) -> dict[str, Any]:
        """Read a place's address, opening hours, rating and distance from here.

        Args:
            place_id: The place id, e.g. place-3.
        """
        return self._view(self._place(place_id))

    @tool(effect="read", id_arg="place_id", idempotent=True)
    async def get_directions(
        self,
        place_id: str = Field(description="Destination place id."),
        mode: TravelMode = "drive",
        from_place_id: str | None = Field(None, description="Start place id; the current position if omitted."),
    ) -> dict[str, Any]:
        """Estimate distance and travel time to a place by walking, bike, car or transit.

        Args:
            place_id: Destination place id.
            mode: walk, bike, drive or transit.
            from_place_id: Start place id; the current position if omitted.
        """
        maps = self.state.maps
        dest = self._place(place_id)
        lat, lon = (maps.lat, maps.lon) if from_place_id is None else (
            (start := self._place(from_place_id)).lat, start.lon)
        km = distance_km(lat, lon, dest.lat, dest.lon)
        minutes = round(km / _SPEED_KMH[mode] * 60) + (_TRANSIT_WAIT_MIN if mode == "transit" else 0)
        arrive = self.state.now + timedelta(minutes=minutes)
        return {"to": dest.name, "mode": mode, "distance_km": round(km, 2), "minutes": max(minutes, 1),
                "arrival": arrive.strftime("%H:%M")}

    @tool(effect="navigate", id_arg="place_id", idempotent=True)
    async def start_navigation(
        self, place_id: str = Field(description="Destination place id."), mode: TravelMode = "drive"
    ) -> dict[str, Any]:
        """Start turn-by-turn guidance to a place (replaces any route in progress).

        Args:
            place_id: Destination place id.
            mode: walk, bike, drive or transit.
        """
        state = self.state
        dest = self._place(place_id)
        nav = state.maps.navigation
        nav.active, nav.destination_id, nav.mode, nav.started_at = True, dest.id, mode, state.now
        state.foreground_app = "com.google.android.apps.maps"
        return {"navigating": True, "to": dest.name, "mode": mode}

    @tool(effect="update", idempotent=True)
    async def stop_navigation(self) -> dict[str, Any]:
        """End the guidance in progress."""
        nav = self.state.maps.navigation
        if not nav.active:
            raise ToolFailure("precondition_failed", "no navigation is running")
        stopped = nav.destination_id
        nav.active, nav.destination_id, nav.mode, nav.started_at = False, None, None, None
        return {"navigating": False, "stopped": stopped}

    @tool(effect="read", idempotent=True)
    async def get_navigation_status(self) -> dict[str, Any]:
        """Read whether guidance is running, to where, by what mode, and the minutes left."""
        maps = self.state.maps
        nav = maps.navigation
        if not nav.active or nav.destination_id is None or nav.mode is None:
            return {"navigating": False}
        dest = self._place(nav.destination_id)
        km = distance_km(maps.lat, maps.lon, dest.lat, dest.lon)
        return {"navigating": True, "to": dest.name, "place_id": dest.id, "mode": nav.mode,
                "minutes_left": max(1, round(km / _SPEED_KMH[nav.mode] * 60))}

    @tool(effect="create", id_arg="place_id", name_arg="label", idempotent=False)
    async def save_place(
        self,
        place_id: str = Field(description="The place to bookmark."),
        label: str = Field("", max_length=60, description="Your name for it; the place's name if empty."),
    ) -> dict[str, Any]:
        """Bookmark a place under a label of your own.

        Args:
            place_id: The place to bookmark.
            label: Your name for it; the place's name if empty.
        """
        maps = self.state.maps
        place = self._place(place_id)
        if any(s.place_id == place_id for s in maps.saved):
            raise ToolFailure("conflict", f"{place.name} is already saved")
        saved = SavedPlace(id=issue_id(maps, "saved"), place_id=place_id, name=label.strip() or place.name)
        maps.saved = [*maps.saved, saved]
        return saved.model_dump()

    @tool(effect="read", idempotent=True)
    async def list_saved_places(self) -> list[dict[str, Any]]:
        """List bookmarked places with their labels, plus which places are home and work."""
        maps = self.state.maps
        rows = [{**s.model_dump(), "address": self._place(s.place_id).address} for s in maps.saved]
        for role, pid in (("home", maps.home_place_id), ("work", maps.work_place_id)):
            if pid is not None:
                rows.append({"id": None, "place_id": pid, "name": role, "address": self._place(pid).address})
        return rows

    @tool(effect="delete", destructive=True, id_arg="saved_id", idempotent=True)
    async def remove_saved_place(self, saved_id: str = Field(description="The bookmark id, e.g. saved-15.")) -> dict[str, Any]:
        """Remove a bookmark (the place itself stays on the map).

        Args:
            saved_id: The bookmark id, e.g. saved-15.
        """
        maps = self.state.maps
        find(maps.saved, saved_id, "saved place")
        maps.saved = [s for s in maps.saved if s.id != saved_id]
        return {"deleted": saved_id}

    @tool(effect="setting", setting="home_address", id_arg="place_id", idempotent=True)
    async def set_home_address(self, place_id: str = Field(description="The place that is home.")) -> dict[str, Any]:
        """Set which place is home, for "directions home".

        Args:
            place_id: The place that is home.
        """
        place = self._place(place_id)
        self.state.maps.home_place_id = place.id
        return {"home": place.id, "address": place.address}

    @tool(effect="setting", setting="work_address", id_arg="place_id", idempotent=True)
    async def set_work_address(self, place_id: str = Field(description="The place that is work.")) -> dict[str, Any]:
        """Set which place is work, for commute estimates.

        Args:
            place_id: The place that is work.
        """
        place = self._place(place_id)
        self.state.maps.work_place_id = place.id
        return {"work": place.id, "address": place.address}

    @tool(effect="send", open_world=True, name_arg="contact", idempotent=False)
    async def share_location(
        self,
        contact: str = Field(min_length=1, max_length=80, description="Contact name or nickname."),
        minutes: int = Field(60, ge=15, le=480, description="How long they may see it."),
    ) -> dict[str, Any]:
        """Share your live location with a contact for a limited time.

        Args:
            contact: Contact name or nickname.
            minutes: How long they may see it.
        """
        state = self.state
        person = resolve_contact(state, contact)
        maps = state.maps
        if any(s.active and s.name == person.name for s in maps.shares):
            raise ToolFailure("conflict", f"already sharing your location with {person.name}")
        share = LocationShare(id=issue_id(maps, "share"), name=person.name, until=state.now + timedelta(minutes=minutes))
        maps.shares = [*maps.shares, share]
        return share.model_dump(mode="json")

    @tool(effect="update", id_arg="share_id", idempotent=True)
    async def stop_sharing_location(self, share_id: str = Field(description="The share id.")) -> dict[str, Any]:
        """Stop a live location share before it runs out.

        Args:
            share_id: The share id.
        """
        share = find(self.state.maps.shares, share_id, "location share")
        share.active = False
        return {"id": share.id, "active": False}
