"""The team's own check, named by the task as ``checks:cast_stamped``."""

from __future__ import annotations

from typing import Any


def cast_stamped(state: dict[str, Any], episode: Any, *, target: str) -> tuple[bool, str]:
    """The cast runs to ``target`` and carries the phone's time, and the run finished."""
    cast = state["world"]["cast"]
    ok = cast["active"] and cast["target"] == target and cast["started_at"] is not None
    return ok and episode.stop_reason == "finish", f"cast {cast}; stop {episode.stop_reason}"
