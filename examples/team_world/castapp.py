"""A team's own casting app, beside the sandbox phone, sharing tool names with it.

``get_cast_status`` and ``start_cast`` are names the phone's cast app also has: the task says
``override: true``, so these win. The app's state has a ``cast`` field as the phone's does;
criteria reach each as ``world.cast`` and ``sandbox.cast``. It reads the phone's clock and
power through the :class:`~pocketpilot.tasks.world.Phone` it is given, so its calls fail with
``device_off`` once the phone is off, as the phone's own do. ``captions`` reads or writes
depending on its argument: ``effect_by_arg`` declares which.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pocketpilot.executor.tools import tool
from pocketpilot.tasks.world import Phone


class CastSession(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    active: bool = False
    target: str | None = None
    started_at: str | None = None
    captions: bool = False


class CastState(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    cast: CastSession = Field(default_factory=CastSession)
    screens: list[str] = Field(default_factory=lambda: ["kitchen", "living room"])


class TeamCast:
    """The team's cast app: sessions it starts are stamped with the phone's clock."""

    name = "teamcast"

    def __init__(self, state: CastState, phone: Phone) -> None:
        self.state = state
        self.phone = phone

    @tool(effect="read")
    async def get_cast_status(self) -> dict[str, Any]:
        """Read the cast session and the screens it can cast to."""
        return {"session": self.state.cast.model_dump(), "screens": self.state.screens}

    @tool(effect="update", idempotent=True)
    async def start_cast(self, target: str = Field(min_length=1)) -> dict[str, Any]:
        """Cast the phone's screen to a screen in the house.

        Args:
            target: The screen's name, as get_cast_status lists it.
        """
        if target not in self.state.screens:
            raise LookupError(f"no screen named {target!r}; screens: {', '.join(self.state.screens)}")
        now = self.phone.now
        self.state.cast = CastSession(active=True, target=target, started_at=now.isoformat() if now else None)
        return {"casting_to": target}

    @tool(effect="setting", setting="captions",
          effect_by_arg={"action": {"query": "read", "on": "setting", "off": "setting"}})
    async def captions(self, action: Literal["query", "on", "off"]) -> dict[str, Any]:
        """Read whether the cast shows captions, or turn them on or off.

        Args:
            action: query, on or off.
        """
        if action != "query":
            self.state.cast.captions = action == "on"
        return {"captions": self.state.cast.captions}
