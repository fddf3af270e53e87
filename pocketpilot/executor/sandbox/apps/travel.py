"""Travel: search and book flights and trains, manage bookings, hail rides between map places."""

from __future__ import annotations

from datetime import date as date_type
from datetime import timedelta
from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..sections.travel import Booking, Ride, RideType, Trip
from ._base import App
from ._payments import charge, refund
from ._records import find, issue_id, money
from .maps import distance_km

__all__ = ["TravelApp"]

_DATE = r"^\d{4}-\d{2}-\d{2}$"
_SEAT = r"^([1-9]|[1-3]\d)[A-F]$"
_FLIGHT_CANCEL_FEE = 0.25
"""Share of a flight's price kept on cancellation (trains refund in full)."""
_RIDE_BASE, _RIDE_PER_KM = 3.5, 1.6
_RIDE_FACTOR = {"standard": 1.0, "comfort": 1.4, "xl": 1.8}


def _trip(t: Trip) -> dict[str, Any]:
    return {"id": t.id, "kind": t.kind, "number": t.name, "carrier": t.carrier, "from": t.origin,
            "to": t.destination, "depart": t.depart.isoformat(), "arrive": t.arrive.isoformat(),
            "price": t.price, "seats_left": t.seats_left}


class TravelApp(App):
    """Flights, trains, bookings and rides."""

    name = "travel"
    domain = "travel_transport"
    section = "travel"
    package = "com.pocketpilot.travel"
    label = "Trips"

    def _search(self, kind: str, origin: str, destination: str, date: str, max_price: float | None) -> list[dict[str, Any]]:
        day = date_type.fromisoformat(date)
        o, d = origin.strip().lower(), destination.strip().lower()
        rows = [
            t for t in self.state.travel.trips
            if t.kind == kind and t.origin.lower() == o and t.destination.lower() == d and t.depart.date() == day
            and (max_price is None or t.price <= max_price)
        ]
        return [_trip(t) for t in sorted(rows, key=lambda t: t.depart)]

    def _booking(self, booking_id: str) -> Booking:
        return find(self.state.travel.bookings, booking_id, "booking")

    def _ride_quote(
        self, destination_place_id: str, pickup_place_id: str | None, ride_type: str
    ) -> tuple[str, str, float, float]:
        maps = self.state.maps
        dest = find(maps.places, destination_place_id, "place")
        if pickup_place_id is None:
            src_name, lat, lon = "Current location", maps.lat, maps.lon
        else:
            src = find(maps.places, pickup_place_id, "place")
            src_name, lat, lon = src.name, src.lat, src.lon
        km = distance_km(lat, lon, dest.lat, dest.lon)
        price = money((_RIDE_BASE + _RIDE_PER_KM * km) * _RIDE_FACTOR[ride_type])
        return src_name, dest.name, round(km, 2), price

    @tool(effect="read", idempotent=True)
    async def search_flights(
        self,
        origin: str = Field(min_length=3, max_length=3, description="Departure airport code, e.g. BER."),
        destination: str = Field(min_length=3, max_length=3, description="Arrival airport code, e.g. MUC."),
        date: str = Field(pattern=_DATE, description="Departure day, YYYY-MM-DD."),
        max_price: float | None = Field(None, gt=0, description="Only fares up to this price per person."),
    ) -> list[dict[str, Any]]:
        """Find flights between two airports on a day, earliest first, with fares and seats left.

        Args:
            origin: Departure airport code, e.g. BER.
            destination: Arrival airport code, e.g. MUC.
            date: Departure day, YYYY-MM-DD.
            max_price: Only fares up to this price per person.
        """
        return self._search("flight", origin, destination, date, max_price)

    @tool(effect="read", idempotent=True)
    async def search_trains(
        self,
        origin: str = Field(min_length=2, max_length=40, description="Departure city, e.g. Berlin."),
        destination: str = Field(min_length=2, max_length=40, description="Arrival city, e.g. Munich."),
        date: str = Field(pattern=_DATE, description="Departure day, YYYY-MM-DD."),
        max_price: float | None = Field(None, gt=0, description="Only fares up to this price per person."),
    ) -> list[dict[str, Any]]:
        """Find trains between two cities on a day, earliest first, with fares and seats left.

        Args:
            origin: Departure city, e.g. Berlin.
            destination: Arrival city, e.g. Munich.
            date: Departure day, YYYY-MM-DD.
            max_price: Only fares up to this price per person.
        """
        return self._search("train", origin, destination, date, max_price)

    @tool(effect="read", id_arg="trip_id", idempotent=True)
    async def get_trip(self, trip_id: str = Field(description="The flight or train id, e.g. trip-1.")) -> dict[str, Any]:
        """Read one flight or train: times, fare, seats left.

        Args:
            trip_id: The flight or train id, e.g. trip-1.
        """
        return _trip(find(self.state.travel.trips, trip_id, "flight or train"))

    @tool(effect="purchase", open_world=True, id_arg="trip_id", idempotent=False)
    async def book_trip(
        self,
        trip_id: str = Field(description="The flight or train id from a search."),
        passengers: int = Field(1, ge=1, le=9, description="Tickets to buy."),
        card_id: str | None = Field(None, description="Card to pay with; the default card if omitted."),
    ) -> dict[str, Any]:
        """Buy tickets for a flight or train; the card is charged the fare times passengers.

        Args:
            trip_id: The flight or train id from a search.
            passengers: Tickets to buy.
            card_id: Card to pay with; the default card if omitted.
        """
        state = self.state
        trip = find(state.travel.trips, trip_id, "flight or train")
        if trip.depart <= state.now:
            raise ToolFailure("precondition_failed", f"{trip.name} has already departed")
        if trip.seats_left < passengers:
            raise ToolFailure("out_of_stock", f"{trip.name} has {trip.seats_left} seat(s) left; {passengers} wanted")
        total = money(trip.price * passengers)
        tx = charge(state, card_id, total, f"{trip.carrier} {trip.name}")
        trip.seats_left -= passengers
        travel = state.travel
        booking = Booking(id=issue_id(travel, "booking"), trip_id=trip.id, kind=trip.kind, name=trip.name,
                          passengers=passengers, price=total, card_id=tx.card_id or "", booked_at=state.now)
        travel.bookings = [*travel.bookings, booking]
        return booking.model_dump(mode="json")

    @tool(effect="read", idempotent=True)
    async def list_bookings(self, include_cancelled: bool = False) -> list[dict[str, Any]]:
        """List the user's tickets with their trip, status and seat.

        Args:
            include_cancelled: Also list cancelled bookings.
        """
        return [
            b.model_dump(mode="json") for b in self.state.travel.bookings
            if include_cancelled or b.status != "cancelled"
        ]

    @tool(effect="read", id_arg="booking_id", idempotent=True)
    async def get_booking(self, booking_id: str = Field(description="The booking id, e.g. booking-11.")) -> dict[str, Any]:
        """Read one booking with its trip's times.

        Args:
            booking_id: The booking id, e.g. booking-11.
        """
        booking = self._booking(booking_id)
        trip = find(self.state.travel.trips, booking.trip_id, "flight or train")
        return {**booking.model_dump(mode="json"), "trip": _trip(trip)}

    @tool(effect="delete", destructive=True, open_world=True, id_arg="booking_id", idempotent=True)
    async def cancel_booking(self, booking_id: str = Field(description="The booking id.")) -> dict[str, Any]:
        """Cancel a booking; trains refund in full, flights keep a 25% fee. Not after check-in.

        Args:
            booking_id: The booking id.
        """
        state = self.state
        booking = self._booking(booking_id)
        if booking.status == "cancelled":
            raise ToolFailure("precondition_failed", f"{booking_id} is already cancelled")
        if booking.status == "checked_in":
            raise ToolFailure("precondition_failed", f"{booking_id} is checked in; it can no longer be cancelled")
        trip = find(state.travel.trips, booking.trip_id, "flight or train")
        back = booking.price if booking.kind == "train" else money(booking.price * (1 - _FLIGHT_CANCEL_FEE))
        refund(state, booking.card_id, back, f"{trip.carrier} {trip.name}")
        trip.seats_left += booking.passengers
        booking.status = "cancelled"
        return {"id": booking.id, "status": "cancelled", "refunded": back}

    @tool(effect="update", open_world=True, id_arg="booking_id", idempotent=True)
    async def check_in(self, booking_id: str = Field(description="The flight booking id.")) -> dict[str, Any]:
        """Check in for a booked flight; opens 24 hours before departure.

        Args:
            booking_id: The flight booking id.
        """
        state = self.state
        booking = self._booking(booking_id)
        if booking.kind != "flight":
            raise ToolFailure("precondition_failed", "trains need no check-in")
        if booking.status == "cancelled":
            raise ToolFailure("precondition_failed", f"{booking_id} is cancelled")
        trip = find(state.travel.trips, booking.trip_id, "flight")
        if not state.now >= trip.depart - timedelta(hours=24):
            raise ToolFailure("precondition_failed", f"check-in for {trip.name} opens 24 hours before departure")
        booking.status = "checked_in"
        return {"id": booking.id, "status": booking.status, "seat": booking.seat}

    @tool(effect="update", open_world=True, id_arg="booking_id", idempotent=True)
    async def select_seat(
        self,
        booking_id: str = Field(description="The flight booking id."),
        seat: str = Field(pattern=_SEAT, description="Row 1-39 and letter A-F, e.g. 14C."),
    ) -> dict[str, Any]:
        """Choose the seat of a flight booking (window seats are A and F, aisle C and D).

        Args:
            booking_id: The flight booking id.
            seat: Row 1-39 and letter A-F, e.g. 14C.
        """
        travel = self.state.travel
        booking = self._booking(booking_id)
        if booking.kind != "flight" or booking.status == "cancelled":
            raise ToolFailure("precondition_failed", f"{booking_id} is not an active flight booking")
        taken = {b.seat for b in travel.bookings if b.trip_id == booking.trip_id and b.id != booking.id}
        if seat in taken:
            raise ToolFailure("conflict", f"seat {seat} is taken")
        booking.seat = seat
        return {"id": booking.id, "seat": seat}

    @tool(effect="read", id_arg="destination_place_id", idempotent=True)
    async def estimate_ride(
        self,
        destination_place_id: str = Field(description="Map place id of the drop-off, e.g. place-11."),
        ride_type: RideType = "standard",
        pickup_place_id: str | None = Field(None, description="Map place id of the pickup; here if omitted."),
    ) -> dict[str, Any]:
        """Quote a ride's price and distance before requesting it.

        Args:
            destination_place_id: Map place id of the drop-off, e.g. place-11.
            ride_type: standard, comfort or xl (six seats).
            pickup_place_id: Map place id of the pickup; here if omitted.
        """
        src, dst, km, price = self._ride_quote(destination_place_id, pickup_place_id, ride_type)
        return {"from": src, "to": dst, "ride_type": ride_type, "distance_km": km, "price": price}

    @tool(effect="purchase", open_world=True, id_arg="destination_place_id", idempotent=False)
    async def request_ride(
        self,
        destination_place_id: str = Field(description="Map place id of the drop-off."),
        ride_type: RideType = "standard",
        pickup_place_id: str | None = Field(None, description="Map place id of the pickup; here if omitted."),
        card_id: str | None = Field(None, description="Card to pay with; the default card if omitted."),
    ) -> dict[str, Any]:
        """Order a ride now; the quoted price is charged to the card.

        Args:
            destination_place_id: Map place id of the drop-off.
            ride_type: standard, comfort or xl (six seats).
            pickup_place_id: Map place id of the pickup; here if omitted.
            card_id: Card to pay with; the default card if omitted.
        """
        state = self.state
        travel = state.travel
        if any(r.status == "requested" for r in travel.rides):
            raise ToolFailure("conflict", "a ride is already on its way; cancel it first")
        src, dst, _, price = self._ride_quote(destination_place_id, pickup_place_id, ride_type)
        tx = charge(state, card_id, price, "RideNow")
        ride = Ride(id=issue_id(travel, "ride"), name=f"{src} to {dst}", pickup_id=pickup_place_id or "current",
                    destination_id=destination_place_id, ride_type=ride_type, price=price,
                    card_id=tx.card_id or "", requested_at=state.now)
        travel.rides = [*travel.rides, ride]
        return {**ride.model_dump(mode="json"), "driver_eta_minutes": 4}

    @tool(effect="read", id_arg="ride_id", idempotent=True)
    async def get_ride_status(self, ride_id: str = Field(description="The ride id.")) -> dict[str, Any]:
        """Read a ride's status, route and price.

        Args:
            ride_id: The ride id.
        """
        return find(self.state.travel.rides, ride_id, "ride").model_dump(mode="json")

    @tool(effect="delete", destructive=True, open_world=True, id_arg="ride_id", idempotent=True)
    async def cancel_ride(self, ride_id: str = Field(description="The ride id.")) -> dict[str, Any]:
        """Cancel a requested ride and get the fare back.

        Args:
            ride_id: The ride id.
        """
        state = self.state
        ride = find(state.travel.rides, ride_id, "ride")
        if ride.status != "requested":
            raise ToolFailure("precondition_failed", f"{ride_id} is {ride.status}; only a requested ride can be cancelled")
        refund(state, ride.card_id, ride.price, "RideNow")
        ride.status = "cancelled"
        return {"id": ride.id, "status": "cancelled", "refunded": ride.price}
