"""The travel app: flight and train timetables, the user's bookings, ride-hailing."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import Field

from ._base import Section

__all__ = ["Booking", "Ride", "RideType", "Trip", "TravelState", "default_travel"]

RideType = Literal["standard", "comfort", "xl"]


class Trip(Section):
    """A scheduled flight or train; ``name`` is its number (``LH 204``, ``ICE 1003``)."""

    id: str
    kind: Literal["flight", "train"]
    name: str
    carrier: str
    origin: str
    destination: str
    depart: datetime
    arrive: datetime
    price: Annotated[float, Field(ge=0)]
    seats_left: Annotated[int, Field(ge=0)]


class Booking(Section):
    """A ticket the user bought for ``trip_id``; ``name`` repeats the trip's for readability."""

    id: str
    trip_id: str
    kind: Literal["flight", "train"]
    name: str
    passengers: Annotated[int, Field(ge=1, le=9)] = 1
    price: Annotated[float, Field(ge=0)]
    card_id: str
    status: Literal["confirmed", "checked_in", "cancelled"] = "confirmed"
    seat: str | None = None
    booked_at: datetime


class Ride(Section):
    """A ride-hailing trip between two map places."""

    id: str
    name: str
    """``<pickup> to <destination>``."""
    pickup_id: str
    destination_id: str
    ride_type: RideType
    price: Annotated[float, Field(ge=0)]
    card_id: str
    status: Literal["requested", "cancelled", "completed"] = "requested"
    requested_at: datetime


class TravelState(Section):
    """Timetables (``trips``), the user's ``bookings`` and ``rides``."""

    trips: list[Trip] = Field(default_factory=list)
    bookings: list[Booking] = Field(default_factory=list)
    rides: list[Ride] = Field(default_factory=list)
    next_id: int = 1


_TRIPS = [
    # kind, number, carrier, from, to, days ahead, depart HH, MM, minutes, price, seats
    ("flight", "LH 204", "Lufthansa", "BER", "MUC", 0, 18, 30, 70, 129.0, 12),
    ("flight", "EW 8011", "Eurowings", "BER", "MUC", 1, 7, 15, 75, 59.0, 3),
    ("flight", "LH 208", "Lufthansa", "BER", "MUC", 1, 12, 45, 70, 99.0, 0),
    ("flight", "AF 1235", "Air France", "BER", "CDG", 3, 9, 5, 110, 142.0, 20),
    ("flight", "BA 983", "British Airways", "BER", "LHR", 3, 14, 20, 120, 168.0, 7),
    ("flight", "LH 205", "Lufthansa", "MUC", "BER", 3, 19, 0, 70, 115.0, 15),
    ("train", "ICE 1003", "DB", "Berlin", "Munich", 1, 8, 30, 240, 79.9, 40),
    ("train", "ICE 1007", "DB", "Berlin", "Munich", 1, 12, 30, 245, 49.9, 2),
    ("train", "IC 2431", "DB", "Berlin", "Hamburg", 0, 16, 0, 110, 29.9, 60),
    ("train", "EC 171", "CD", "Berlin", "Prague", 2, 10, 15, 270, 39.0, 25),
]


def default_travel(now: datetime) -> TravelState:
    """A week of BER/Berlin departures and one confirmed booking for tomorrow's ICE."""
    trips = []
    for i, (kind, number, carrier, src, dst, ahead, hh, mm, minutes, price, seats) in enumerate(_TRIPS, start=1):
        depart = (now + timedelta(days=ahead)).replace(hour=hh, minute=mm)
        trips.append(Trip(id=f"trip-{i}", kind=kind, name=number, carrier=carrier, origin=src, destination=dst,  # type: ignore[arg-type]
                          depart=depart, arrive=depart + timedelta(minutes=minutes), price=price, seats_left=seats))
    return TravelState(
        trips=trips,
        bookings=[Booking(id="booking-11", trip_id="trip-7", kind="train", name="ICE 1003", price=79.9,
                          card_id="card-1", booked_at=now - timedelta(days=5))],
        next_id=12,
    )
