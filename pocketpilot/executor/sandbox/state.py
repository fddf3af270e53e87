"""The sandbox phone's whole world state, as one serializable pydantic model.

One sub-model per app keeps paths short and readable for verifiers and for the adb simulated
phone that presents this state over adb. Paths (dotted, list indices as integers) are the
vocabulary of task criteria, e.g. ``settings.wifi``, ``notes.items``, ``foreground_app``.

Mapping to Android (for the adb simulated phone):

- ``settings.wifi`` / ``settings.bluetooth``: ``settings get global wifi_on`` / ``bluetooth_on``
- ``settings.do_not_disturb``: ``settings get global zen_mode`` (0 off, 1 on)
- ``settings.brightness`` (0-100): ``settings get system screen_brightness`` (scaled to 0-255)
- ``settings.ring_mode``: ``settings get global mode_ringer`` (silent 0, vibrate 1, normal 2)
- ``foreground_app``: an Android package name, e.g. ``com.android.launcher3`` (home screen)
- ``installed_apps``: ``pm list packages``; ``device.powered_on`` False: the device is gone.

The clock is fixed (``now``), timezone-aware and part of the state, so outputs are deterministic.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .sections.accessibility import AccessibilityState
from .sections.bank import BankState
from .sections.email import EmailState
from .sections.files import FilesState
from .sections.gallery import GalleryState
from .sections.home import HomeState
from .sections.maps import MapsState
from .sections.music import MusicState
from .sections.shop import ShopState
from .sections.travel import TravelState
from .sections.wallet import WalletState

__all__ = [
    "Alarm",
    "AlarmsState",
    "AppInfo",
    "CalendarEvent",
    "CalendarState",
    "CastState",
    "Contact",
    "ContactsState",
    "DeviceState",
    "EarbudsState",
    "HealthDay",
    "HealthState",
    "Message",
    "MessagesState",
    "NoiseControl",
    "Note",
    "NotesState",
    "PhoneState",
    "RingMode",
    "SettingsState",
]

RingMode = Literal["normal", "vibrate", "silent"]
NoiseControl = Literal["off", "transparency", "noise_cancelling"]
HOME_PACKAGE = "com.android.launcher3"


class _State(BaseModel):
    # Mutable on purpose (tools change it), but every assignment is validated so a buggy tool
    # cannot put the world into a shape the schema forbids.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class DeviceState(_State):
    """The device itself: identity, battery and power."""

    model: str = "Pixel 8"
    serial: str = "sandbox-0001"
    android_version: str = "14"
    battery: Annotated[int, Field(ge=0, le=100)] = 76
    powered_on: bool = True
    """False after ``power_off``: every tool then fails with ``device_off``."""


class SettingsState(_State):
    """System settings (quick settings panel)."""

    wifi: bool = True
    bluetooth: bool = True
    do_not_disturb: bool = False
    brightness: Annotated[int, Field(ge=0, le=100)] = 60
    ring_mode: RingMode = "normal"


class EarbudsState(_State):
    """Paired Bluetooth earbuds; connected only while Bluetooth is on."""

    name: str = "Pixel Buds Pro"
    paired: bool = True
    connected: bool = True
    noise_control: NoiseControl = "off"
    battery: Annotated[int, Field(ge=0, le=100)] = 82


class Note(_State):
    """One note; ids are ``note-<n>`` and never reused."""

    id: str
    title: str
    body: str = ""
    created_at: datetime


class NotesState(_State):
    """The notes app."""

    items: list[Note] = Field(default_factory=list)
    next_id: int = 1


class Contact(_State):
    """One address-book entry."""

    id: str
    name: str
    phone: str
    email: str | None = None
    nickname: str | None = None


class ContactsState(_State):
    """The address book."""

    items: list[Contact] = Field(default_factory=list)


class Message(_State):
    """One SMS, received (``inbox``) or sent (``sent``)."""

    id: str
    number: str
    contact: str | None = None
    """Contact name at the time of sending/receiving, if the number is known."""
    body: str
    at: datetime
    read: bool = True


class MessagesState(_State):
    """The SMS app."""

    inbox: list[Message] = Field(default_factory=list)
    sent: list[Message] = Field(default_factory=list)
    next_id: int = 1


class HealthDay(_State):
    """One day of health data."""

    steps: Annotated[int, Field(ge=0)]
    resting_heart_rate: Annotated[int, Field(ge=20, le=250)]
    avg_heart_rate: Annotated[int, Field(ge=20, le=250)]
    sleep_minutes: Annotated[int, Field(ge=0, le=1440)]


class HealthState(_State):
    """Health data keyed by ISO date (``YYYY-MM-DD``)."""

    days: dict[str, HealthDay] = Field(default_factory=dict)

    @field_validator("days")
    @classmethod
    def _iso_dates(cls, value: dict[str, HealthDay]) -> dict[str, HealthDay]:
        for key in value:
            datetime.strptime(key, "%Y-%m-%d")  # ValueError becomes a validation error
        return value


class CastState(_State):
    """Screen casting: one live session at most."""

    active: bool = False
    target: str | None = None
    available_targets: list[str] = Field(default_factory=list)


class AppInfo(_State):
    """One installed app."""

    package: str
    label: str


class Alarm(_State):
    """One alarm; ``time`` is ``HH:MM`` (24 h) in the phone's local time."""

    id: str
    time: str = Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")
    label: str = ""
    enabled: bool = True


class AlarmsState(_State):
    """The clock app's alarms."""

    items: list[Alarm] = Field(default_factory=list)
    next_id: int = 1


class CalendarEvent(_State):
    """One calendar event, local time."""

    id: str
    title: str
    start: datetime
    duration_minutes: Annotated[int, Field(ge=1, le=1440)] = 60
    location: str = ""


class CalendarState(_State):
    """The calendar app."""

    events: list[CalendarEvent] = Field(default_factory=list)
    next_id: int = 1


class PhoneState(_State):
    """Everything the sandbox phone knows; ``model_dump_json`` / ``model_validate_json`` round-trip it."""

    now: datetime
    """The fixed clock (timezone-aware)."""
    seed: int = 0
    device: DeviceState = Field(default_factory=DeviceState)
    settings: SettingsState = Field(default_factory=SettingsState)
    earbuds: EarbudsState = Field(default_factory=EarbudsState)
    notes: NotesState = Field(default_factory=NotesState)
    contacts: ContactsState = Field(default_factory=ContactsState)
    messages: MessagesState = Field(default_factory=MessagesState)
    health: HealthState = Field(default_factory=HealthState)
    cast: CastState = Field(default_factory=CastState)
    alarms: AlarmsState = Field(default_factory=AlarmsState)
    calendar: CalendarState = Field(default_factory=CalendarState)
    installed_apps: list[AppInfo] = Field(default_factory=list)
    foreground_app: str = HOME_PACKAGE
    """Android package name of the app in front; the launcher when at home."""
    # The sections of the apps added with issue 16 §2 (models and seed data in ``sections/``).
    accessibility: AccessibilityState = Field(default_factory=AccessibilityState)
    email: EmailState = Field(default_factory=EmailState)
    maps: MapsState = Field(default_factory=MapsState)
    home: HomeState = Field(default_factory=HomeState)
    music: MusicState = Field(default_factory=MusicState)
    gallery: GalleryState = Field(default_factory=GalleryState)
    files: FilesState = Field(default_factory=FilesState)
    bank: BankState = Field(default_factory=BankState)
    shop: ShopState = Field(default_factory=ShopState)
    travel: TravelState = Field(default_factory=TravelState)
    wallet: WalletState = Field(default_factory=WalletState)

    @field_validator("now")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("the clock must be timezone-aware")
        return value
