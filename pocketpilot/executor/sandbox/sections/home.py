"""The smart-home app: devices by room, scenes, away mode and the door lock's PIN."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ._base import Section

__all__ = ["DeviceKind", "HomeDevice", "HomeState", "LightColor", "Scene", "SceneAction", "default_home"]

DeviceKind = Literal["light", "plug", "thermostat", "lock", "blinds", "vacuum", "speaker"]
LightColor = Literal["warm_white", "cool_white", "red", "orange", "green", "blue", "purple"]
ThermostatMode = Literal["heat", "cool", "auto", "off"]


class HomeDevice(Section):
    """One connected device; fields that do not apply to its kind stay None."""

    id: str
    name: str
    room: str
    kind: DeviceKind
    online: bool = True
    on: bool = False
    brightness: Annotated[int, Field(ge=1, le=100)] | None = None
    color: LightColor | None = None
    target_c: Annotated[float, Field(ge=10, le=30)] | None = None
    current_c: float | None = None
    mode: ThermostatMode | None = None
    locked: bool | None = None
    position: Annotated[int, Field(ge=0, le=100)] | None = None
    """Blinds: percent open."""


class SceneAction(Section):
    """What a scene does to one device (None: leave that aspect alone)."""

    device_id: str
    on: bool | None = None
    brightness: Annotated[int, Field(ge=1, le=100)] | None = None
    target_c: Annotated[float, Field(ge=10, le=30)] | None = None
    locked: bool | None = None
    position: Annotated[int, Field(ge=0, le=100)] | None = None


class Scene(Section):
    """A named set of device states applied together."""

    id: str
    name: str
    actions: list[SceneAction] = Field(default_factory=list)


class HomeState(Section):
    """The home's devices and scenes."""

    name: str = "Elm St 14"
    devices: list[HomeDevice] = Field(default_factory=list)
    scenes: list[Scene] = Field(default_factory=list)
    away_mode: bool = False
    unlock_pin: str = "2468"
    """The PIN unlock_door asks for (the planner is told it only by the user)."""
    next_id: int = 1


def default_home() -> HomeState:
    """Eleven devices in five rooms (one offline) and three scenes."""
    d = HomeDevice
    devices = [
        d(id="dev-1", name="Living room ceiling", room="Living room", kind="light", on=True, brightness=70,
          color="warm_white"),
        d(id="dev-2", name="Reading lamp", room="Living room", kind="light", brightness=40, color="warm_white"),
        d(id="dev-3", name="Bedroom light", room="Bedroom", kind="light", brightness=30, color="warm_white"),
        d(id="dev-4", name="Kitchen lights", room="Kitchen", kind="light", on=True, brightness=100, color="cool_white"),
        d(id="dev-5", name="Coffee machine", room="Kitchen", kind="plug"),
        d(id="dev-6", name="Thermostat", room="Hallway", kind="thermostat", on=True, target_c=21.0, current_c=20.5,
          mode="heat"),
        d(id="dev-7", name="Front door", room="Hallway", kind="lock", on=True, locked=True),
        d(id="dev-8", name="Living room blinds", room="Living room", kind="blinds", on=True, position=100),
        d(id="dev-9", name="Robot vacuum", room="Hallway", kind="vacuum"),
        d(id="dev-10", name="Kitchen speaker", room="Kitchen", kind="speaker", on=True),
        d(id="dev-11", name="Garden lights", room="Garden", kind="light", online=False, brightness=80,
          color="warm_white"),
    ]
    return HomeState(
        devices=devices,
        scenes=[
            Scene(id="scene-12", name="Movie night", actions=[
                SceneAction(device_id="dev-1", on=True, brightness=15),
                SceneAction(device_id="dev-2", on=False),
                SceneAction(device_id="dev-8", position=0),
            ]),
            Scene(id="scene-13", name="Good night", actions=[
                SceneAction(device_id="dev-1", on=False), SceneAction(device_id="dev-2", on=False),
                SceneAction(device_id="dev-4", on=False), SceneAction(device_id="dev-7", locked=True),
                SceneAction(device_id="dev-6", target_c=18.0),
            ]),
            Scene(id="scene-14", name="Morning", actions=[
                SceneAction(device_id="dev-5", on=True), SceneAction(device_id="dev-8", position=100),
                SceneAction(device_id="dev-6", target_c=21.0),
            ]),
        ],
        next_id=15,
    )
