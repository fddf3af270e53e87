"""The travel app: flight and train search, bookings, check-in and seats, rides."""

from __future__ import annotations

from datetime import timedelta

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

from pocketpilot.executor.sandbox import PhoneState
from pocketpilot.executor.sandbox.sections.travel import Booking, Ride


def _flight_booking(s: PhoneState, trip: str = "trip-1", status: str = "confirmed") -> None:
    s.travel.bookings = [*s.travel.bookings, Booking(id="booking-12", trip_id=trip, kind="flight", name="LH 204",
                                                     price=129.0, card_id="card-1", status=status,  # type: ignore[arg-type]
                                                     booked_at=s.now)]


def _ride(s: PhoneState, status: str = "requested") -> None:
    s.travel.rides = [Ride(id="ride-12", name="Current location to Central Station", pickup_id="current",
                           destination_id="place-11", ride_type="standard", price=9.0, card_id="card-1",
                           status=status, requested_at=s.now)]  # type: ignore[arg-type]


SUCCESSES = [
    Ok("search_flights", {"origin": "ber", "destination": "MUC", "date": "2025-03-15"},
       lambda d, s: [f["number"] for f in d] == ["EW 8011", "LH 208"]),
    Ok("search_flights", {"origin": "BER", "destination": "MUC", "date": "2025-03-15", "max_price": 60},
       lambda d, s: [f["number"] for f in d] == ["EW 8011"]),
    Ok("search_trains", {"origin": "Berlin", "destination": "munich", "date": "2025-03-15"},
       lambda d, s: [(t["number"], t["price"]) for t in d] == [("ICE 1003", 79.9), ("ICE 1007", 49.9)]),
    Ok("get_trip", {"trip_id": "trip-4"}, lambda d, s: d["to"] == "CDG" and d["seats_left"] == 20),
    Ok("book_trip", {"trip_id": "trip-2", "passengers": 2},
       lambda d, s: d["price"] == 118.0 and s.travel.trips[1].seats_left == 1 and s.wallet.cards[0].available == 1732.0
       and s.travel.bookings[-1].id == "booking-12"),
    Ok("book_trip", {"trip_id": "trip-9", "card_id": "card-2"},
       lambda d, s: s.wallet.cards[1].available == 10.1 and d["card_id"] == "card-2"),
    Ok("list_bookings", {}, lambda d, s: [b["id"] for b in d] == ["booking-11"]),
    Ok("list_bookings", {}, lambda d, s: d == [], setup=lambda s: setattr(s.travel.bookings[0], "status", "cancelled")),
    Ok("get_booking", {"booking_id": "booking-11"}, lambda d, s: d["trip"]["number"] == "ICE 1003"),
    Ok("cancel_booking", {"booking_id": "booking-11"},
       lambda d, s: d["refunded"] == 79.9 and s.travel.bookings[0].status == "cancelled"
       and s.wallet.cards[0].available == 1929.9 and s.travel.trips[6].seats_left == 41),
    Ok("cancel_booking", {"booking_id": "booking-12"},  # flights keep 25%
       lambda d, s: d["refunded"] == 96.75, setup=_flight_booking),
    Ok("check_in", {"booking_id": "booking-12"}, lambda d, s: s.travel.bookings[-1].status == "checked_in",
       setup=_flight_booking),
    Ok("select_seat", {"booking_id": "booking-12", "seat": "14A"}, lambda d, s: s.travel.bookings[-1].seat == "14A",
       setup=_flight_booking),
    Ok("estimate_ride", {"destination_place_id": "place-11", "ride_type": "xl"},
       lambda d, s: d["to"] == "Central Station" and d["price"] > 1.8 * 3.5),
    Ok("request_ride", {"destination_place_id": "place-11"},
       lambda d, s: s.travel.rides[0].status == "requested" and s.wallet.transactions[-1].amount == -d["price"]),
    Ok("get_ride_status", {"ride_id": "ride-12"}, lambda d, s: d["status"] == "requested", setup=_ride),
    Ok("cancel_ride", {"ride_id": "ride-12"},
       lambda d, s: s.travel.rides[0].status == "cancelled" and s.wallet.cards[0].available == 1859.0, setup=_ride),
]

FAILURES = [
    Fails("search_flights", {"origin": "BER", "destination": "MUC", "date": "15/03/2025"}, "invalid_arguments"),
    Fails("get_trip", {"trip_id": "trip-99"}, "not_found"),
    Fails("book_trip", {"trip_id": "trip-3"}, "out_of_stock", message="0 seat"),
    Fails("book_trip", {"trip_id": "trip-2", "passengers": 4}, "out_of_stock"),
    Fails("book_trip", {"trip_id": "trip-4", "card_id": "card-2"}, "insufficient_funds"),
    Fails("book_trip", {"trip_id": "trip-1"}, "precondition_failed", message="departed",
          setup=lambda s: setattr(s, "now", s.now + timedelta(hours=10))),
    Fails("cancel_booking", {"booking_id": "booking-12"}, "precondition_failed", message="checked in",
          setup=lambda s: _flight_booking(s, status="checked_in")),
    Fails("cancel_booking", {"booking_id": "booking-11"}, "precondition_failed", message="already cancelled",
          setup=lambda s: setattr(s.travel.bookings[0], "status", "cancelled")),
    Fails("check_in", {"booking_id": "booking-11"}, "precondition_failed", message="trains"),
    Fails("check_in", {"booking_id": "booking-12"}, "precondition_failed", message="24 hours",
          setup=lambda s: _flight_booking(s, trip="trip-4")),
    Fails("select_seat", {"booking_id": "booking-12", "seat": "14G"}, "invalid_arguments", setup=_flight_booking),
    Fails("select_seat", {"booking_id": "booking-11", "seat": "3C"}, "precondition_failed"),
    Fails("estimate_ride", {"destination_place_id": "place-0"}, "not_found"),
    Fails("request_ride", {"destination_place_id": "place-12"}, "conflict", setup=_ride),
    Fails("request_ride", {"destination_place_id": "place-12", "card_id": "card-3"}, "precondition_failed"),
    Fails("cancel_ride", {"ride_id": "ride-12"}, "precondition_failed", setup=lambda s: _ride(s, "completed")),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_travel_tool_has_a_success() -> None:
    assert_covers("travel", SUCCESSES)


async def test_a_taken_seat_conflicts() -> None:
    phone, ex = fresh()
    a = (await call(ex, "book_trip", trip_id="trip-4")).data["id"]
    b = (await call(ex, "book_trip", trip_id="trip-4")).data["id"]
    assert (await call(ex, "select_seat", booking_id=a, seat="2F")).ok
    assert (await call(ex, "select_seat", booking_id=b, seat="2F")).error.code == "conflict"
    assert phone.state.travel.trips[3].seats_left == 18
