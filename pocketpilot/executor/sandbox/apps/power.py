"""Device power and identity."""

from __future__ import annotations

from typing import Any

from ...tools import tool
from ._base import App

__all__ = ["PowerApp"]


class PowerApp(App):
    """Device information and power off."""

    name = "power"
    domain = "system"
    section = "device"

    @tool(effect="read", idempotent=True)
    async def get_device_info(self) -> dict[str, Any]:
        """Read the device model, Android version, battery level and current time."""
        state = self.state
        return {**state.device.model_dump(exclude={"powered_on"}), "now": state.now.isoformat()}

    @tool(effect="update", destructive=True, idempotent=True)
    async def power_off(self) -> dict[str, Any]:
        """Power the phone off; nothing else works afterwards."""
        state = self.state
        state.cast.active, state.cast.target = False, None
        state.device.powered_on = False
        return {"powered_on": False}
