"""Session(prior=...): earlier conversation after the stable prefix and before the request."""

from __future__ import annotations

from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import ChatMessage, Session
from pocketpilot.harness.planners import ScriptedPlanner


def _executor() -> SandboxExecutor:
    phone = SandboxPhone()
    return SandboxExecutor(phone, phone.tool_names("settings"))


async def test_prior_messages_sit_between_prefix_and_request_on_every_step() -> None:
    prior = [
        ChatMessage(role="user", content="(2025-03-10 18:00) Set brightness to 25.", section="prior"),
        ChatMessage(role="assistant", content="(2025-03-10 18:01) Done!", section="prior"),
    ]
    planner = ScriptedPlanner([{"kind": "tool_call", "calls": [{"name": "get_settings", "arguments": {}}]},
                               {"kind": "finish", "summary": "ok"}])
    await Session(planner, _executor(), prior=prior).run("Is it done?")
    for request in planner.requests:
        assert request.messages[0].role == "system"
        assert request.messages[1:3] == prior
        assert request.messages[3].content == "Is it done?"
    assert len(planner.requests[1].messages) == len(planner.requests[0].messages) + 2  # history after the request


async def test_without_prior_the_context_is_unchanged() -> None:
    planner = ScriptedPlanner([{"kind": "finish", "summary": "ok"}])
    await Session(planner, _executor()).run("hello")
    assert [m.role for m in planner.requests[0].messages] == ["system", "user"]


async def test_sub_agents_do_not_inherit_the_prior_conversation() -> None:
    prior = [ChatMessage(role="user", content="secret earlier talk", section="prior")]
    planner = ScriptedPlanner([
        {"kind": "delegate", "instruction": "read the settings", "tools": ["get_settings"]},
        {"kind": "finish", "summary": "child done"},
        {"kind": "finish", "summary": "parent done"},
    ])
    await Session(planner, _executor(), prior=prior).run("delegate it")
    child_request = planner.requests[1]
    assert child_request.messages[-1].content == "read the settings"
    assert all("secret earlier talk" not in m.content for m in child_request.messages)
    assert any("secret earlier talk" in m.content for m in planner.requests[2].messages)
