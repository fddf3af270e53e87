"""The calendar app."""

from __future__ import annotations

from datetime import date as date_type
from datetime import datetime, time
from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..state import CalendarEvent
from ._base import App

__all__ = ["CalendarApp"]

_DATE = r"^\d{4}-\d{2}-\d{2}$"
_HHMM = r"^([01]\d|2[0-3]):[0-5]\d$"


def _event(e: CalendarEvent) -> dict[str, Any]:
    return {
        "id": e.id,
        "title": e.title,
        "date": e.start.date().isoformat(),
        "start_time": e.start.strftime("%H:%M"),
        "duration_minutes": e.duration_minutes,
        "location": e.location,
    }


class CalendarApp(App):
    """List, create and delete calendar events."""

    name = "calendar"
    domain = "productivity"
    section = "calendar"

    @tool(effect="read", idempotent=True)
    async def list_events(
        self, date: str = Field(pattern=_DATE, description="YYYY-MM-DD.")
    ) -> list[dict[str, Any]]:
        """List the events of one day.

        Args:
            date: YYYY-MM-DD.
        """
        day = date_type.fromisoformat(date)
        return [
            _event(e)
            for e in sorted(self.state.calendar.events, key=lambda e: e.start)
            if e.start.date() == day
        ]

    @tool(effect="create", name_arg="title", idempotent=False)
    async def create_event(
        self,
        title: str = Field(min_length=1, max_length=100, description="Event title."),
        date: str = Field(pattern=_DATE, description="YYYY-MM-DD."),
        start_time: str = Field(pattern=_HHMM, description="HH:MM, 24-hour."),
        duration_minutes: int = Field(60, ge=1, le=1440, description="Length in minutes."),
        location: str = Field("", max_length=100, description="Optional place."),
    ) -> dict[str, Any]:
        """Create a calendar event and return its id.

        Args:
            title: Event title.
            date: YYYY-MM-DD.
            start_time: HH:MM, 24-hour.
            duration_minutes: Length in minutes.
            location: Optional place.
        """
        state = self.state
        start = datetime.combine(
            date_type.fromisoformat(date), time.fromisoformat(start_time), tzinfo=state.now.tzinfo
        )
        cal = state.calendar
        event = CalendarEvent(
            id=f"event-{cal.next_id}",
            title=title,
            start=start,
            duration_minutes=duration_minutes,
            location=location,
        )
        cal.events = [*cal.events, event]
        cal.next_id += 1
        return _event(event)

    @tool(effect="delete", destructive=True, id_arg="event_id", idempotent=True)
    async def delete_event(self, event_id: str) -> dict[str, Any]:
        """Delete a calendar event by id.

        Args:
            event_id: The event id, e.g. event-1.
        """
        cal = self.state.calendar
        if not any(e.id == event_id for e in cal.events):
            raise ToolFailure("not_found", f"no event with id {event_id!r}")
        cal.events = [e for e in cal.events if e.id != event_id]
        return {"deleted": event_id}
