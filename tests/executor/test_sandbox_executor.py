"""SandboxExecutor: tool exposure, the Executor protocol, unknown tools, concurrent batches."""

from __future__ import annotations

import asyncio

import pytest

from pocketpilot.contracts import ToolCall
from pocketpilot.errors import UsageError
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.executor.tools import ToolRegistry
from pocketpilot.harness.base import Executor


def test_is_an_executor() -> None:
    assert isinstance(SandboxExecutor(SandboxPhone()), Executor)


def test_registry_holds_every_app_tool() -> None:
    phone = SandboxPhone()
    registry = phone.registry()
    assert isinstance(registry, ToolRegistry)
    assert registry.names() == [t for app in phone.apps for t in phone.tool_names(app)]
    assert phone.tool_names("cast") == ["get_cast_status", "start_cast", "stop_cast"]
    assert phone.app_of("send_sms") == "messages"
    with pytest.raises(UsageError, match="unknown sandbox app 'radio'"):
        phone.tool_names("radio")


def test_exposes_named_tools_and_apps_without_duplicates() -> None:
    ex = SandboxExecutor(SandboxPhone(), ["send_sms", "cast", "start_cast"])
    assert [t.name for t in ex.tools()] == ["send_sms", "get_cast_status", "start_cast", "stop_cast"]
    assert ex.registry.names() == [t.name for t in ex.tools()]


def test_unknown_exposed_names_raise_a_clear_error() -> None:
    with pytest.raises(UsageError) as info:
        SandboxExecutor(SandboxPhone(), ["set_wifi", "teleport", "radio"])
    message = str(info.value)
    assert "'teleport'" in message and "'radio'" in message and "set_wifi" in message.split("tools:")[1]


async def test_unexposed_tool_is_a_tool_failure_and_changes_nothing() -> None:
    phone = SandboxPhone()
    ex = SandboxExecutor(phone, ["settings"])
    result = await ex.call(ToolCall(name="power_off"))
    assert not result.ok and result.error is not None and result.error.code == "unknown_tool"
    assert phone.state.device.powered_on


async def test_parallel_batch_is_deterministic() -> None:
    async def batch() -> tuple[list[str], list[str]]:
        phone = SandboxPhone()
        ex = SandboxExecutor(phone)
        calls = [ToolCall(name="create_note", arguments={"title": f"n{i}"}) for i in range(4)]
        results = await asyncio.gather(*(ex.call(c) for c in calls))
        return [r.data["id"] for r in results], [n.title for n in phone.state.notes.items[3:]]

    ids, titles = await batch()
    assert ids == ["note-4", "note-5", "note-6", "note-7"]
    assert titles == ["n0", "n1", "n2", "n3"]
    assert await batch() == (ids, titles)


async def test_two_phones_do_not_share_state() -> None:
    a, b = SandboxPhone(), SandboxPhone()
    await SandboxExecutor(a).call(ToolCall(name="set_wifi", arguments={"enabled": False}))
    assert a.state.settings.wifi is False and b.state.settings.wifi is True
