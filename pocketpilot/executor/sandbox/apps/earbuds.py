"""Bluetooth earbuds: connection and noise control."""

from __future__ import annotations

from typing import Any

from ....errors import ToolFailure
from ...tools import tool
from ..state import NoiseControl
from ._base import App

__all__ = ["EarbudsApp"]


class EarbudsApp(App):
    """The earbuds companion: status, connect, noise control."""

    name = "earbuds"
    domain = "media_casting"
    section = "earbuds"

    @tool(effect="read", idempotent=True)
    async def get_earbuds_status(self) -> dict[str, Any]:
        """Read the earbuds' connection, noise control mode and battery."""
        return self.state.earbuds.model_dump()

    @tool(effect="update", idempotent=True)
    async def connect_earbuds(self) -> dict[str, Any]:
        """Connect the paired earbuds (Bluetooth must be on)."""
        state = self.state
        if not state.earbuds.paired:
            raise ToolFailure("not_found", "no earbuds are paired with this phone")
        if not state.settings.bluetooth:
            raise ToolFailure("bluetooth_off", "Bluetooth is off; turn it on before connecting the earbuds")
        state.earbuds.connected = True
        return {"connected": True, "name": state.earbuds.name}

    @tool(effect="setting", setting="noise_control", idempotent=True)
    async def set_noise_control(self, mode: NoiseControl) -> dict[str, Any]:
        """Set the earbuds' noise control: off, transparency or noise_cancelling.

        Args:
            mode: The noise control mode.
        """
        state = self.state
        if not state.earbuds.connected:
            raise ToolFailure("not_connected", f"{state.earbuds.name} are not connected")
        state.earbuds.noise_control = mode
        return {"noise_control": mode}
