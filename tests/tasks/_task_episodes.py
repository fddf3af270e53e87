"""Helpers to build episodes by hand for verifier tests."""

from __future__ import annotations

from typing import Any

from pocketpilot.contracts import (
    Action,
    AskUser,
    Episode,
    EpisodeHeader,
    Finish,
    PlannerInfo,
    Refuse,
    Step,
    StopReason,
    ToolCall,
    ToolCallAction,
    ToolResult,
)


def calls(*pairs: tuple[str, dict[str, Any], ToolResult]) -> tuple[Action, list[ToolResult]]:
    """One tool_call step (a batch if several pairs)."""
    action = ToolCallAction(calls=[ToolCall(name=n, arguments=a) for n, a, _ in pairs])
    return action, [r for _, _, r in pairs]


def good(name: str, args: dict[str, Any] | None = None, data: Any = None) -> tuple[Action, list[ToolResult]]:
    """A step with one successful call."""
    return calls((name, args or {}, ToolResult.success(data)))


def bad(
    name: str, args: dict[str, Any] | None = None, code: str = "conflict"
) -> tuple[Action, list[ToolResult]]:
    """A step with one failed call."""
    return calls((name, args or {}, ToolResult.failure(code, "nope")))


def make_episode(*steps: tuple[Action, list[ToolResult]] | Action, stop: StopReason | None = None) -> Episode:
    """An episode from steps; ``stop`` defaults to the kind of a final finish/ask_user/refuse."""
    built = []
    for i, step in enumerate(steps):
        action, results = step if isinstance(step, tuple) else (step, [])
        built.append(Step(index=i, context_digest=f"d{i}", action=action, results=results))
    last = built[-1].action if built else None
    if stop is None and isinstance(last, (Finish, AskUser, Refuse)):
        stop = last.kind
    header = EpisodeHeader(episode_id="e1", request="test", planner=PlannerInfo(backend="test", model="none"))
    return Episode(header=header, steps=built, stop_reason=stop)
