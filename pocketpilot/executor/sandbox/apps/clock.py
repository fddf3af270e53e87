"""The clock app: current time and alarms."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..state import Alarm
from ._base import App

__all__ = ["ClockApp"]

_HHMM = r"^([01]\d|2[0-3]):[0-5]\d$"


class ClockApp(App):
    """Current time and alarms."""

    name = "clock"
    domain = "productivity"
    section = "alarms"

    def _find(self, alarm_id: str) -> Alarm:
        for alarm in self.state.alarms.items:
            if alarm.id == alarm_id:
                return alarm
        raise ToolFailure("not_found", f"no alarm with id {alarm_id!r}")

    @tool(effect="read", idempotent=True)
    async def get_current_time(self) -> dict[str, str]:
        """Read the current local date, time and weekday."""
        now = self.state.now
        return {
            "date": now.date().isoformat(),
            "time": now.strftime("%H:%M"),
            "weekday": now.strftime("%A"),
            "iso": now.isoformat(),
        }

    @tool(effect="read", idempotent=True)
    async def list_alarms(self) -> list[dict[str, Any]]:
        """List alarms (id, time, label, enabled)."""
        return [a.model_dump() for a in self.state.alarms.items]

    @tool(effect="create", name_arg="label", idempotent=False)
    async def create_alarm(
        self,
        time: str = Field(pattern=_HHMM, description="HH:MM, 24-hour, e.g. 06:30."),
        label: str = Field("", max_length=60, description="Optional label."),
    ) -> dict[str, Any]:
        """Create an enabled alarm at a 24-hour time.

        Args:
            time: HH:MM, 24-hour, e.g. 06:30.
            label: Optional label.
        """
        alarms = self.state.alarms
        if any(a.time == time and a.enabled for a in alarms.items):
            raise ToolFailure("conflict", f"an enabled alarm at {time} already exists")
        alarm = Alarm(id=f"alarm-{alarms.next_id}", time=time, label=label)
        alarms.items = [*alarms.items, alarm]
        alarms.next_id += 1
        return alarm.model_dump()

    @tool(effect="update", id_arg="alarm_id", idempotent=True)
    async def set_alarm_enabled(self, alarm_id: str, enabled: bool) -> dict[str, Any]:
        """Turn an existing alarm on or off.

        Args:
            alarm_id: The alarm id, e.g. alarm-1.
            enabled: True to turn it on.
        """
        alarm = self._find(alarm_id)
        alarm.enabled = enabled
        return alarm.model_dump()

    @tool(effect="delete", destructive=True, id_arg="alarm_id", idempotent=True)
    async def delete_alarm(self, alarm_id: str) -> dict[str, Any]:
        """Delete an alarm by id.

        Args:
            alarm_id: The alarm id, e.g. alarm-1.
        """
        alarm = self._find(alarm_id)
        self.state.alarms.items = [a for a in self.state.alarms.items if a.id != alarm.id]
        return {"deleted": alarm.id}
