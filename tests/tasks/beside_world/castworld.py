"""A team's casting world that sits beside the sandbox phone and shares names with it.

Its app offers ``get_cast_status`` and ``start_cast`` (names the sandbox's cast app also has),
its state has a ``cast`` field (as the phone's does) and a ``now`` of its own, and it reads the
phone's clock through the :class:`~pocketpilot.tasks.world.Phone` it is given.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pocketpilot.executor.tools import tool
from pocketpilot.tasks.world import Phone


class Session(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    active: bool = False
    target: str | None = None
    started_at: str | None = None


class CastState(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    cast: Session = Field(default_factory=Session)
    now: datetime = datetime(2030, 1, 1, 12, 0)
    log: list[str] = Field(default_factory=list)


class TeamCast:
    """The team's own cast app: sessions it starts are stamped with the phone's clock."""

    name = "teamcast"

    def __init__(self, state: CastState, phone: Phone) -> None:
        self.state = state
        self.phone = phone

    @tool(effect="read", idempotent=True)
    async def get_cast_status(self) -> dict[str, Any]:
        """Read the team's cast session."""
        return {"source": "team", **self.state.cast.model_dump()}

    @tool(effect="update", idempotent=True)
    async def start_cast(self, target: str = Field(min_length=1)) -> dict[str, Any]:
        """Cast to a screen.

        Args:
            target: The screen's name.
        """
        now = self.phone.now
        self.state.cast = Session(active=True, target=target, started_at=now.isoformat() if now else None)
        return {"source": "team", "target": target}

    @tool(effect="create", idempotent=False)
    async def write_log(self, text: str = Field(min_length=1)) -> dict[str, Any]:
        """Add a line to the cast log.

        Args:
            text: The line.
        """
        self.state.log = [*self.state.log, text]
        return {"lines": len(self.state.log)}
