"""The planner actions tests script, built in one place.

A test that drives a session with the scripted planner writes each step as the JSON a model would
emit (a dict): the planner validates it against the step's tools and kinds exactly as it would a
model's text, so a script written this way takes the same path. Tests that hand an action to a
component directly (an executor, a policy, an episode) want the contract itself: ``call_action``
gives that.
"""

from __future__ import annotations

from typing import Any

from pocketpilot.contracts import ToolCall, ToolCallAction


def entry(name: str, **arguments: Any) -> dict[str, Any]:
    """One call inside a ``tool_call`` action (a batch is a list of these)."""
    return {"name": name, "arguments": arguments}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A ``tool_call`` action of one call."""
    return {"kind": "tool_call", "calls": [entry(name, **arguments)]}


def batch(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A ``tool_call`` action of several calls, each a ``(name, arguments)`` pair, in order."""
    return {"kind": "tool_call", "calls": [{"name": name, "arguments": arguments} for name, arguments in calls]}


def delegate(instruction: str, tools: list[str], artifacts: dict[str, str] | None = None) -> dict[str, Any]:
    """A ``delegate`` action; ``artifacts`` are left out unless given (the contract defaults them to none)."""
    action: dict[str, Any] = {"kind": "delegate", "instruction": instruction, "tools": tools}
    if artifacts is not None:
        action["artifacts"] = artifacts
    return action


def finish(summary: str = "done", answer: str | None = None) -> dict[str, Any]:
    """A ``finish`` action; an empty ``answer`` is left out, as the contract refuses an empty one."""
    return {"kind": "finish", "summary": summary, **({"answer": answer} if answer else {})}


def call_action(name: str, **arguments: Any) -> ToolCallAction:
    """A ``tool_call`` contract of one call."""
    return ToolCallAction(calls=[ToolCall(name=name, arguments=arguments)])
