"""System settings: the quick-settings toggles and sliders."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ...tools import tool
from ..state import RingMode
from ._base import App

__all__ = ["SettingsApp"]


class SettingsApp(App):
    """Wi-Fi, Bluetooth, do-not-disturb, brightness and ring mode."""

    name = "settings"
    domain = "settings_connectivity"
    section = "settings"

    @tool(effect="read", idempotent=True)
    async def get_settings(self) -> dict[str, Any]:
        """Read the current system settings (wifi, bluetooth, do_not_disturb, brightness, ring_mode)."""
        return self.state.settings.model_dump()

    @tool(effect="setting", setting="wifi", idempotent=True)
    async def set_wifi(self, enabled: bool) -> dict[str, Any]:
        """Turn Wi-Fi on or off.

        Args:
            enabled: True to turn Wi-Fi on.
        """
        self.state.settings.wifi = enabled
        return {"wifi": enabled}

    @tool(effect="setting", setting="bluetooth", idempotent=True)
    async def set_bluetooth(self, enabled: bool) -> dict[str, Any]:
        """Turn Bluetooth on or off (off disconnects the earbuds).

        Args:
            enabled: True to turn Bluetooth on.
        """
        state = self.state
        state.settings.bluetooth = enabled
        if not enabled:
            state.earbuds.connected = False
        return {"bluetooth": enabled}

    @tool(effect="setting", setting="do_not_disturb", idempotent=True)
    async def set_do_not_disturb(self, enabled: bool) -> dict[str, Any]:
        """Turn do-not-disturb on or off.

        Args:
            enabled: True to silence notifications.
        """
        self.state.settings.do_not_disturb = enabled
        return {"do_not_disturb": enabled}

    @tool(effect="setting", setting="brightness", idempotent=True)
    async def set_brightness(
        self, level: int = Field(ge=0, le=100, description="Brightness from 0 to 100.")
    ) -> dict[str, Any]:
        """Set screen brightness in percent.

        Args:
            level: Brightness from 0 to 100.
        """
        self.state.settings.brightness = level
        return {"brightness": level}

    @tool(effect="setting", setting="ring_mode", idempotent=True)
    async def set_ring_mode(self, mode: RingMode) -> dict[str, Any]:
        """Set the ring mode: normal, vibrate or silent.

        Args:
            mode: The new ring mode.
        """
        self.state.settings.ring_mode = mode
        return {"ring_mode": mode}
