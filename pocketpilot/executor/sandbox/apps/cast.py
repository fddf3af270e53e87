"""Screen casting: one live session at most, as on real devices."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ._base import App

__all__ = ["CastApp"]


class CastApp(App):
    """Start, stop and inspect screen casting."""

    name = "cast"
    domain = "media_casting"
    section = "cast"

    @tool(effect="read", idempotent=True)
    async def get_cast_status(self) -> dict[str, Any]:
        """Read whether the screen is being cast, to which target, and the available targets."""
        return self.state.cast.model_dump()

    @tool(effect="update", idempotent=True, open_world=True)
    async def start_cast(
        self,
        target: str = Field(min_length=1, max_length=60, description="Display name, e.g. Living Room TV."),
    ) -> dict[str, Any]:
        """Start casting the screen to a display.

        Args:
            target: Display name, e.g. Living Room TV.
        """
        cast = self.state.cast
        match = [t for t in cast.available_targets if t.lower() == target.strip().lower()]
        if not match:
            raise ToolFailure(
                "not_found", f"no display named {target!r}; available: {', '.join(cast.available_targets)}"
            )
        if cast.active:
            raise ToolFailure("conflict", f"already casting to {cast.target}; stop that cast first")
        cast.active, cast.target = True, match[0]
        return {"active": True, "target": match[0]}

    @tool(effect="update", idempotent=True)
    async def stop_cast(self) -> dict[str, Any]:
        """Stop the current screen cast."""
        cast = self.state.cast
        if not cast.active:
            raise ToolFailure("not_active", "the screen is not being cast")
        stopped = cast.target
        cast.active, cast.target = False, None
        return {"active": False, "stopped": stopped}
