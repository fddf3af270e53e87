"""The default seeded world: who is in the address book, what the notes say, health history.

Everything but the health history is fixed so task authors can write criteria against it; the
health history is drawn from ``random.Random(seed)`` so different seeds give different (but
reproducible) numbers. Tasks that ask about specific days pin those days in their
``initial_state`` rather than relying on the draw.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from .sections.bank import default_bank
from .sections.email import default_email
from .sections.files import default_files
from .sections.gallery import default_gallery
from .sections.home import default_home
from .sections.maps import default_maps
from .sections.music import default_music
from .sections.shop import default_shop
from .sections.travel import default_travel
from .sections.wallet import default_wallet
from .state import (
    Alarm,
    AlarmsState,
    AppInfo,
    CalendarEvent,
    CalendarState,
    CastState,
    Contact,
    ContactsState,
    HealthDay,
    HealthState,
    Message,
    MessagesState,
    Note,
    NotesState,
    PhoneState,
)

__all__ = ["DEFAULT_NOW", "HEALTH_DAYS", "default_state"]

LOCAL_TZ = timezone(timedelta(hours=1), "CET")
DEFAULT_NOW = datetime(2025, 3, 14, 9, 30, tzinfo=LOCAL_TZ)
"""Friday 14 March 2025, 09:30 CET: the sandbox clock unless a task overrides ``now``."""
HEALTH_DAYS = 14
"""Days of health history before (and including) today."""

_APPS = [
    ("com.android.settings", "Settings"),
    ("com.google.android.apps.messaging", "Messages"),
    ("com.google.android.keep", "Notes"),
    ("com.google.android.contacts", "Contacts"),
    ("com.google.android.deskclock", "Clock"),
    ("com.google.android.calendar", "Calendar"),
    ("com.google.android.apps.fitness", "Fit"),
    ("com.google.android.calculator", "Calculator"),
    ("com.google.android.GoogleCamera", "Camera"),
    ("com.android.chrome", "Chrome"),
    ("com.google.android.apps.maps", "Maps"),
    ("com.spotify.music", "Spotify"),
    ("com.google.android.youtube", "YouTube"),
]

_CONTACTS = [
    ("c1", "Alice Chen", "+1-555-0101", "alice.chen@example.com", None),
    ("c2", "Alice Moreau", "+1-555-0102", "alice.moreau@example.com", None),
    ("c3", "Bob Martin", "+1-555-0103", "bob@example.com", "Bobby"),
    ("c4", "Carlos Diaz", "+1-555-0104", None, None),
    ("c5", "Dana Lee", "+1-555-0105", "dana.lee@example.com", "Mom"),
    ("c6", "Priya Raman", "+1-555-0106", "priya@example.com", None),
    ("c7", "Sam Taylor", "+1-555-0107", None, None),
    ("c8", "Jordan Kim", "+1-555-0108", "jordan.kim@example.com", None),
]


def _health(seed: int, today: datetime) -> dict[str, HealthDay]:
    rng = random.Random(seed)
    days: dict[str, HealthDay] = {}
    for back in range(HEALTH_DAYS - 1, -1, -1):
        day = (today - timedelta(days=back)).date().isoformat()
        resting = rng.randint(54, 66)
        days[day] = HealthDay(
            steps=rng.randint(2500, 14000),
            resting_heart_rate=resting,
            avg_heart_rate=resting + rng.randint(8, 20),
            sleep_minutes=rng.randint(330, 510),
        )
    return days


def default_state(seed: int = 0, now: datetime = DEFAULT_NOW) -> PhoneState:
    """Build the default world; only the health history depends on ``seed``."""
    at = now - timedelta(hours=1)
    return PhoneState(
        now=now,
        seed=seed,
        notes=NotesState(
            items=[
                Note(id="note-1", title="Groceries", body="milk, eggs, spinach", created_at=at),
                Note(id="note-2", title="Wifi password", body="guest network: sunflower42", created_at=at),
                Note(
                    id="note-3",
                    title="Book ideas",
                    body="a lighthouse keeper who collects radios",
                    created_at=at,
                ),
            ],
            next_id=4,
        ),
        contacts=ContactsState(
            items=[Contact(id=i, name=n, phone=p, email=e, nickname=k) for i, n, p, e, k in _CONTACTS]
        ),
        messages=MessagesState(
            inbox=[
                Message(
                    id="sms-1",
                    number="+1-555-0103",
                    contact="Bob Martin",
                    body="Are we still on for lunch tomorrow?",
                    at=at,
                    read=False,
                ),
                Message(
                    id="sms-2",
                    number="+1-555-0105",
                    contact="Dana Lee",
                    body="Call me when you land",
                    at=at - timedelta(days=1),
                ),
                Message(
                    id="sms-3",
                    number="+1-555-0199",
                    contact=None,
                    body="Your parcel is delayed, new delivery date: Monday",
                    at=at - timedelta(hours=3),
                    read=False,
                ),
            ],
            next_id=4,
        ),
        health=HealthState(days=_health(seed, now)),
        cast=CastState(available_targets=["Living Room TV", "Bedroom TV", "Office Display"]),
        alarms=AlarmsState(
            items=[
                Alarm(id="alarm-1", time="07:00", label="Wake up", enabled=True),
                Alarm(id="alarm-2", time="06:15", label="Gym", enabled=False),
            ],
            next_id=3,
        ),
        calendar=CalendarState(
            events=[
                CalendarEvent(
                    id="event-1",
                    title="Dentist",
                    start=now.replace(hour=15, minute=0),
                    duration_minutes=60,
                    location="Main St 12",
                ),
                CalendarEvent(
                    id="event-2",
                    title="Team standup",
                    start=(now + timedelta(days=3)).replace(hour=10, minute=0),
                    duration_minutes=15,
                ),
            ],
            next_id=3,
        ),
        installed_apps=[AppInfo(package=p, label=lbl) for p, lbl in _APPS],
        email=default_email(now),
        maps=default_maps(now),
        home=default_home(),
        music=default_music(),
        gallery=default_gallery(now),
        files=default_files(now),
        bank=default_bank(now),
        shop=default_shop(now),
        travel=default_travel(now),
        wallet=default_wallet(now),
    )
