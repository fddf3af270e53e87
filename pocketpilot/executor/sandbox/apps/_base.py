"""What every sandbox app shares: access to the phone's current state behind the power gate."""

from __future__ import annotations

from typing import ClassVar, Literal, Protocol

from ....errors import ToolFailure
from ..state import PhoneState

__all__ = ["ARTIFACT_FIELDS", "DOMAINS", "ID_FIELD", "NAME_FIELDS", "App", "Domain", "StateHolder"]

Domain = Literal[
    "settings_connectivity",
    "system",
    "media_casting",
    "accessibility",
    "communication",
    "productivity",
    "health",
    "utilities",
    "maps_navigation",
    "travel_transport",
    "shopping_payments",
    "finance",
    "files_media",
    "music",
    "smart_home",
]
"""The area of a user's world an app belongs to: reporting and task generation group by it."""
DOMAINS: tuple[str, ...] = Domain.__args__  # type: ignore[attr-defined]


ARTIFACT_FIELDS: tuple[str, ...] = ("id", "file", "filename", "path", "uri", "phone", "number", "email", "*_id")
"""What every sandbox tool declares as its results' artifacts (``ToolSpec.artifact_fields``):
ids and files, and the addresses a lookup resolves (a helper that "finds Jordan's number"
returns it as ``phone``). A confirmed sub-agent hands these on to its parent."""

NAME_FIELDS: tuple[str, ...] = ("name", "title", "label", "phone", "number")
"""What every sandbox tool declares as the names of the records it returns
(``ToolSpec.name_fields``), in the order a name is preferred."""

ID_FIELD = "id"
"""What every sandbox tool declares as the id of the records it returns (``ToolSpec.id_field``):
the records of the phone's state carry their id under this key."""


class StateHolder(Protocol):
    """Anything holding the current world state (the phone; restore swaps the object)."""

    state: PhoneState


class App:
    """Base of the sandbox apps; subclasses define ``@tool`` methods.

    Tools reach the world through :attr:`state` only, which fails with ``device_off`` once the
    phone is powered off: so "after power off every further action fails" holds for every app,
    including ones added later, without each tool remembering to check.
    """

    name: ClassVar[str]
    """Short app name; task files may list it to expose all of the app's tools."""
    domain: ClassVar[Domain]
    """Which area of the user's world the app serves (declared, like its tools' semantics)."""
    section: ClassVar[str | None] = None
    """The ``PhoneState`` field holding the app's records, if it has one of its own."""
    package: ClassVar[str | None] = None
    """The Android package the simulated phone shows the app as (None: a system function)."""
    label: ClassVar[str | None] = None
    """Its launcher label."""

    def __init__(self, phone: StateHolder) -> None:
        self._phone = phone

    @property
    def state(self) -> PhoneState:
        """The live state, or ``ToolFailure('device_off')`` when the phone is off."""
        state = self._phone.state
        if not state.device.powered_on:
            raise ToolFailure("device_off", "the phone is powered off; nothing can run until it is turned on")
        return state
