"""The harness shows the device's clock as evidence; the bare planner does not get it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from pocketpilot.evaluation.compare import device_clock, run_task
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite


def test_device_clock_names_the_day_date_time_and_tomorrow():
    now = datetime(2025, 3, 14, 9, 30, tzinfo=timezone(timedelta(hours=1)))
    text = device_clock(now)
    assert "Friday 2025-03-14 09:30" in text and "tomorrow is 2025-03-15" in text


async def test_harness_mode_shows_the_clock_and_bare_mode_does_not(tmp_path):
    task = next(t for t in load_suite() if t.id == "calendar-dinner-priya")
    seen = {}
    for mode in ("harness", "bare"):
        planner = ScriptedPlanner([{"kind": "finish", "summary": "done"}])
        await run_task(task, planner, mode=mode, trace_dir=tmp_path / mode, embedder=None)
        seen[mode] = "\n".join(m.content for m in planner.requests[0].messages)
    assert "On the device it is now" in seen["harness"]
    assert "On the device it is now" not in seen["bare"]
