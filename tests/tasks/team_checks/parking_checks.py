"""A team's own checks, as a task file names them (``parking_checks:parked``)."""

from __future__ import annotations

from typing import Any


def parked(state: dict[str, Any], episode: Any, *, bay: str = "42") -> tuple[bool, str]:
    """A note written this run mentions the bay, and the run finished."""
    notes = state["notes"]["items"]
    hits = [n["id"] for n in notes if f"bay {bay}" in n["title"] + " " + n["body"]]
    finished = episode.stop_reason == "finish"
    return bool(hits) and finished, f"notes mentioning bay {bay}: {hits}; stop {episode.stop_reason}"


def new_note(state: dict[str, Any], episode: Any, initial: dict[str, Any]) -> bool:
    """Reads the start state too: a note was added."""
    return len(state["notes"]["items"]) > len(initial["notes"]["items"])


def wifi_off(state: dict[str, Any], episode: Any) -> bool:
    return state["settings"]["wifi"] is False


def explodes(state: dict[str, Any], episode: Any) -> bool:
    raise KeyError("no_such_section")


def vandal(state: dict[str, Any], episode: Any) -> bool:
    """Tries to change what later criteria read, and the episode."""
    state["settings"]["wifi"] = "vandalised"
    episode.steps.clear()
    return True


def says_maybe(state: dict[str, Any], episode: Any) -> Any:
    return "maybe"


async def in_a_hurry(state: dict[str, Any], episode: Any) -> bool:
    return True


NOT_CALLABLE = 42
