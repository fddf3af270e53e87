"""How a model bench prints its progress and writes its report, shared so they stay one way.

A report is written whole to a temporary file and renamed over the old one, so a bench killed
mid-write leaves the previous report (what ``--resume`` reads), never half of one.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["save_report", "say"]


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
