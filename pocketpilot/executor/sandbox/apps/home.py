"""Smart home: lights, plugs, thermostat, lock, blinds and vacuum, scenes and away mode."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..sections.home import DeviceKind, HomeDevice, LightColor, Scene, SceneAction, ThermostatMode
from ._base import App
from ._records import find, issue_id

__all__ = ["HomeApp"]


def _view(d: HomeDevice) -> dict[str, Any]:
    return {k: v for k, v in d.model_dump().items() if v is not None}


class HomeApp(App):
    """Control the devices of the user's connected home."""

    name = "home"
    domain = "smart_home"
    section = "home"
    package = "com.google.android.apps.chromecast.app"
    label = "Home"

    def _device(self, device_id: str, *kinds: DeviceKind) -> HomeDevice:
        """A reachable device of one of ``kinds``; offline devices cannot be controlled."""
        device = find(self.state.home.devices, device_id, "device")
        if kinds and device.kind not in kinds:
            raise ToolFailure("invalid_arguments", f"{device.name} is a {device.kind}, not a {' or '.join(kinds)}")
        if not device.online:
            raise ToolFailure("precondition_failed", f"{device.name} is offline; check its power or Wi-Fi")
        return device

    def _apply(self, action: SceneAction) -> bool:
        device = next((d for d in self.state.home.devices if d.id == action.device_id), None)
        if device is None or not device.online:
            return False
        for field in ("on", "brightness", "target_c", "locked", "position"):
            value = getattr(action, field)
            if value is not None:
                setattr(device, field, value)
        if action.brightness is not None:
            device.on = True
        return True

    @tool(effect="read", idempotent=True)
    async def list_home_devices(
        self,
        room: str | None = Field(None, max_length=40, description="Only this room, e.g. Kitchen."),
        kind: DeviceKind | None = None,
    ) -> list[dict[str, Any]]:
        """List the home's devices with their state, to find the device id other tools take.

        Args:
            room: Only this room, e.g. Kitchen.
            kind: Only this kind of device.
        """
        want = room.strip().lower() if room else None
        return [_view(d) for d in self.state.home.devices
                if (want is None or d.room.lower() == want) and kind in (None, d.kind)]

    @tool(effect="read", id_arg="device_id", idempotent=True)
    async def get_home_device(self, device_id: str = Field(description="The device id, e.g. dev-1.")) -> dict[str, Any]:
        """Read one device's full state.

        Args:
            device_id: The device id, e.g. dev-1.
        """
        return _view(find(self.state.home.devices, device_id, "device"))

    @tool(effect="update", open_world=True, id_arg="device_id", idempotent=True)
    async def set_device_power(
        self, device_id: str = Field(description="The device id."), on: bool = Field(description="True turns it on.")
    ) -> dict[str, Any]:
        """Switch a light, plug, speaker or vacuum on or off.

        Args:
            device_id: The device id.
            on: True turns it on.
        """
        device = self._device(device_id, "light", "plug", "speaker", "vacuum")
        device.on = on
        return _view(device)

    @tool(effect="update", open_world=True, id_arg="device_id", idempotent=True)
    async def set_light_brightness(
        self,
        device_id: str = Field(description="A light's id."),
        level: int = Field(ge=1, le=100, description="Brightness in percent."),
    ) -> dict[str, Any]:
        """Dim or brighten a light (turning it on).

        Args:
            device_id: A light's id.
            level: Brightness in percent.
        """
        device = self._device(device_id, "light")
        device.on, device.brightness = True, level
        return _view(device)

    @tool(effect="update", open_world=True, id_arg="device_id", idempotent=True)
    async def set_light_color(
        self, device_id: str = Field(description="A light's id."), color: LightColor = Field(description="The colour.")
    ) -> dict[str, Any]:
        """Change a light's colour (turning it on).

        Args:
            device_id: A light's id.
            color: warm_white, cool_white, red, orange, green, blue or purple.
        """
        device = self._device(device_id, "light")
        device.on, device.color = True, color
        return _view(device)

    @tool(effect="update", open_world=True, id_arg="device_id", idempotent=True)
    async def set_thermostat(
        self,
        device_id: str = Field(description="The thermostat's id."),
        target_c: float = Field(ge=10, le=30, description="Target temperature in degrees Celsius."),
        mode: ThermostatMode | None = Field(None, description="heat, cool, auto or off; unchanged if omitted."),
    ) -> dict[str, Any]:
        """Set the thermostat's target temperature and optionally its mode.

        Args:
            device_id: The thermostat's id.
            target_c: Target temperature in degrees Celsius.
            mode: heat, cool, auto or off; unchanged if omitted.
        """
        device = self._device(device_id, "thermostat")
        device.target_c = target_c
        if mode is not None:
            device.mode, device.on = mode, mode != "off"
        return _view(device)

    @tool(effect="update", open_world=True, id_arg="device_id", idempotent=True)
    async def lock_door(self, device_id: str = Field(description="The lock's id.")) -> dict[str, Any]:
        """Lock a door.

        Args:
            device_id: The lock's id.
        """
        device = self._device(device_id, "lock")
        device.locked = True
        return _view(device)

    @tool(effect="update", open_world=True, id_arg="device_id", idempotent=True)
    async def unlock_door(
        self,
        device_id: str = Field(description="The lock's id."),
        pin: str = Field(pattern=r"^\d{4,8}$", description="The home's unlock PIN, as the user gives it."),
    ) -> dict[str, Any]:
        """Unlock a door remotely; needs the home's PIN and away mode off.

        Args:
            device_id: The lock's id.
            pin: The home's unlock PIN, as the user gives it.
        """
        home = self.state.home
        device = self._device(device_id, "lock")
        if pin != home.unlock_pin:
            raise ToolFailure("permission_denied", "wrong PIN; the door stays locked")
        if home.away_mode:
            raise ToolFailure("precondition_failed", "away mode is on; turn it off before unlocking")
        device.locked = False
        return _view(device)

    @tool(effect="update", open_world=True, id_arg="device_id", idempotent=True)
    async def set_blinds(
        self,
        device_id: str = Field(description="The blinds' id."),
        percent_open: int = Field(ge=0, le=100, description="0 closed, 100 fully open."),
    ) -> dict[str, Any]:
        """Open, close or half-open blinds.

        Args:
            device_id: The blinds' id.
            percent_open: 0 closed, 100 fully open.
        """
        device = self._device(device_id, "blinds")
        device.position = percent_open
        return _view(device)

    @tool(effect="read", idempotent=True)
    async def list_scenes(self) -> list[dict[str, Any]]:
        """List scenes and the devices each one changes."""
        return [s.model_dump(exclude_none=True) for s in self.state.home.scenes]

    @tool(effect="update", open_world=True, id_arg="scene_id", idempotent=True)
    async def activate_scene(self, scene_id: str = Field(description="The scene id, e.g. scene-12.")) -> dict[str, Any]:
        """Apply a scene to its devices at once (offline devices are skipped and named).

        Args:
            scene_id: The scene id, e.g. scene-12.
        """
        scene = find(self.state.home.scenes, scene_id, "scene")
        skipped = [a.device_id for a in scene.actions if not self._apply(a)]
        return {"scene": scene.name, "applied": len(scene.actions) - len(skipped), "skipped": skipped}

    @tool(effect="create", name_arg="name", idempotent=False)
    async def create_scene(
        self,
        name: str = Field(min_length=1, max_length=60, description="The scene's name."),
        room: str = Field(min_length=1, max_length=40, description="Room whose current device states it saves."),
    ) -> dict[str, Any]:
        """Save how a room's devices are set right now as a scene to recall later.

        Args:
            name: The scene's name.
            room: Room whose current device states it saves.
        """
        home = self.state.home
        if any(s.name.lower() == name.strip().lower() for s in home.scenes):
            raise ToolFailure("conflict", f"a scene named {name!r} already exists")
        devices = [d for d in home.devices if d.room.lower() == room.strip().lower() and d.online]
        if not devices:
            rooms = sorted({d.room for d in home.devices})
            raise ToolFailure("not_found", f"no reachable devices in {room!r}; rooms: {', '.join(rooms)}")
        actions = [SceneAction(device_id=d.id, on=d.on, brightness=d.brightness if d.on else None,
                               target_c=d.target_c, locked=d.locked, position=d.position) for d in devices]
        scene = Scene(id=issue_id(home, "scene"), name=name.strip(), actions=actions)
        home.scenes = [*home.scenes, scene]
        return scene.model_dump(exclude_none=True)

    @tool(effect="delete", destructive=True, id_arg="scene_id", idempotent=True)
    async def delete_scene(self, scene_id: str = Field(description="The scene id.")) -> dict[str, Any]:
        """Delete a scene (the devices keep their current state).

        Args:
            scene_id: The scene id.
        """
        home = self.state.home
        find(home.scenes, scene_id, "scene")
        home.scenes = [s for s in home.scenes if s.id != scene_id]
        return {"deleted": scene_id}

    @tool(effect="setting", setting="away_mode", open_world=True, idempotent=True)
    async def set_away_mode(self, enabled: bool) -> dict[str, Any]:
        """Turn away mode on (lights off, doors locked, remote unlock blocked) or off.

        Args:
            enabled: True when nobody is home.
        """
        home = self.state.home
        home.away_mode = enabled
        if enabled:
            for d in home.devices:
                if d.online and d.kind == "light":
                    d.on = False
                if d.online and d.kind == "lock":
                    d.locked = True
        return {"away_mode": enabled}
