"""The maps app: places around the user, saved places, navigation and location sharing."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from ._base import Section

__all__ = [
    "LocationShare",
    "MapsState",
    "Navigation",
    "Place",
    "PlaceCategory",
    "SavedPlace",
    "TravelMode",
    "default_maps",
]

PlaceCategory = Literal[
    "cafe", "restaurant", "pharmacy", "supermarket", "gas_station", "park", "museum", "hospital", "station",
    "airport", "office", "residence",
]
TravelMode = Literal["walk", "bike", "drive", "transit"]


class Place(Section):
    """A point of interest; ``opens``/``closes`` are HH:MM local time."""

    id: str
    name: str
    category: PlaceCategory
    address: str
    lat: float
    lon: float
    rating: Annotated[float, Field(ge=0, le=5)] = 4.0
    opens: str = "08:00"
    closes: str = "20:00"


class SavedPlace(Section):
    """A bookmark of a place under the user's own label."""

    id: str
    place_id: str
    name: str


class Navigation(Section):
    """Turn-by-turn guidance; one route at a time."""

    active: bool = False
    destination_id: str | None = None
    mode: TravelMode | None = None
    started_at: datetime | None = None


class LocationShare(Section):
    """The user's live location shared with a contact until ``until``."""

    id: str
    name: str
    """The contact's name."""
    until: datetime
    active: bool = True


class MapsState(Section):
    """Places, bookmarks, home/work, the current position and live guidance."""

    lat: float = 52.5200
    lon: float = 13.4050
    """Where the phone is now."""
    places: list[Place] = Field(default_factory=list)
    saved: list[SavedPlace] = Field(default_factory=list)
    home_place_id: str | None = None
    work_place_id: str | None = None
    navigation: Navigation = Field(default_factory=Navigation)
    shares: list[LocationShare] = Field(default_factory=list)
    next_id: int = 1


_PLACES = [
    ("Corner Bean Cafe", "cafe", "Linden Ave 3", 52.5212, 13.4071, 4.6, "07:00", "18:00"),
    ("Green Leaf Bistro", "restaurant", "Harbor St 18", 52.5165, 13.3990, 4.3, "11:30", "22:30"),
    ("Trattoria Sole", "restaurant", "Market Sq 7", 52.5251, 13.4122, 4.7, "12:00", "23:00"),
    ("City Pharmacy", "pharmacy", "Main St 40", 52.5190, 13.4102, 4.1, "08:00", "20:00"),
    ("Night Pharmacy", "pharmacy", "Station Rd 2", 52.5250, 13.3690, 3.9, "00:00", "23:59"),
    ("FreshMart", "supermarket", "Main St 88", 52.5178, 13.4150, 4.0, "07:00", "22:00"),
    ("Fuel Stop", "gas_station", "Ring Rd 120", 52.5030, 13.4400, 3.8, "00:00", "23:59"),
    ("Riverside Park", "park", "River Walk", 52.5140, 13.3950, 4.8, "00:00", "23:59"),
    ("Museum of Light", "museum", "Museum Island 1", 52.5169, 13.4019, 4.5, "10:00", "18:00"),
    ("St. Mary Hospital", "hospital", "Hill St 5", 52.5266, 13.3770, 4.2, "00:00", "23:59"),
    ("Central Station", "station", "Station Rd 1", 52.5251, 13.3694, 4.0, "00:00", "23:59"),
    ("City Airport", "airport", "Airport Blvd", 52.3667, 13.5033, 3.7, "00:00", "23:59"),
    ("Northwind Office", "office", "Tower Plaza 9", 52.5075, 13.3900, 4.0, "07:00", "20:00"),
    ("Home", "residence", "Elm St 14", 52.5300, 13.4200, 5.0, "00:00", "23:59"),
]


def default_maps(now: datetime) -> MapsState:
    """Fourteen places in one city; home and work set; one saved cafe; nothing running."""
    places = [
        Place(id=f"place-{i}", name=n, category=c, address=a, lat=la, lon=lo, rating=r, opens=o, closes=cl)  # type: ignore[arg-type]
        for i, (n, c, a, la, lo, r, o, cl) in enumerate(_PLACES, start=1)
    ]
    return MapsState(
        places=places,
        saved=[SavedPlace(id="saved-15", place_id="place-1", name="Morning coffee")],
        home_place_id="place-14",
        work_place_id="place-13",
        next_id=16,
    )
