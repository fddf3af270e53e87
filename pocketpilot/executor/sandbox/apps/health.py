"""Health data: steps, heart rate and sleep per day from the seeded history."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any, Literal

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ._base import App

__all__ = ["HealthApp"]


class HealthApp(App):
    """Query the health history."""

    name = "health"
    domain = "health"
    section = "health"

    def _day(self, when: str) -> date:
        today = self.state.now.date()
        key = when.strip().lower()
        if key == "today":
            return today
        if key == "yesterday":
            return today - timedelta(days=1)
        try:
            return date.fromisoformat(key)
        except ValueError as exc:
            raise ToolFailure(
                "invalid_arguments", f"date must be today, yesterday or YYYY-MM-DD, not {when!r}"
            ) from exc

    @tool(effect="read", idempotent=True)
    async def query_health(
        self,
        metric: Literal["steps", "heart_rate", "sleep"],
        date: str = Field(
            "today", max_length=10, description="today, yesterday or YYYY-MM-DD (the last day of the range)."
        ),
        days: int = Field(1, ge=1, le=14, description="Number of days ending on date."),
    ) -> dict[str, Any]:
        """Get steps, heart rate or sleep for a day, or for several days ending on that day.

        Args:
            metric: steps, heart_rate (bpm) or sleep (minutes).
            date: today, yesterday or YYYY-MM-DD (the last day of the range).
            days: Number of days ending on date.
        """
        end = self._day(date)
        history = self.state.health.days
        rows: list[dict[str, Any]] = []
        for back in range(days - 1, -1, -1):
            key = (end - timedelta(days=back)).isoformat()
            day = history.get(key)
            if day is None:
                covered = f"{min(history)} to {max(history)}" if history else "no days"
                raise ToolFailure("not_found", f"no health data for {key}; data covers {covered}")
            if metric == "steps":
                rows.append({"date": key, "steps": day.steps})
            elif metric == "heart_rate":
                rows.append(
                    {"date": key, "resting_bpm": day.resting_heart_rate, "average_bpm": day.avg_heart_rate}
                )
            else:
                rows.append(
                    {
                        "date": key,
                        "sleep_minutes": day.sleep_minutes,
                        "sleep_hours": round(day.sleep_minutes / 60, 2),
                    }
                )
        out: dict[str, Any] = {"metric": metric, "days": rows}
        if days > 1:
            field = {"steps": "steps", "heart_rate": "resting_bpm", "sleep": "sleep_minutes"}[metric]
            values = [r[field] for r in rows]
            out["average"] = round(sum(values) / len(values), 1)
            if metric == "steps":
                out["total"] = sum(values)
        return out
