"""How a model bench prints its progress and writes its report, shared so they stay one way.

A report is written whole to a temporary file and renamed over the old one, so a bench killed
mid-write leaves the previous report (what ``--resume`` reads), never half of one.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

__all__ = ["save_report", "say", "timed_report"]


def say(line: str) -> None:
    """One line of progress on stdout, flushed (a bench's log is read while it runs)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def save_report(out: Path | None, report: dict[str, Any]) -> None:
    """``report`` as indented JSON at ``out``, atomically (nothing when ``out`` is None)."""
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out)


async def timed_report(runs: Awaitable[dict[str, Any]], meta: dict[str, Any], *, planner: Any = None) -> dict[str, Any]:
    """Await a bench's runs, free ``planner`` (if any) whatever happens, and stamp the report's
    meta with the wall time and the load average the runs saw.
    """
    t0 = time.monotonic()
    try:
        report = await runs
    finally:
        if planner is not None:
            await planner.aclose()
    report["meta"] = {**meta, "wall_s": round(time.monotonic() - t0, 1), "load_average": os.getloadavg()[0]}
    return report
