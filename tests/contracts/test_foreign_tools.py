"""Wrapping someone else's tools: from a schema, arguments as given, every failure a result."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from enum import Enum

import pytest
from pydantic import Field

from pocketpilot.contracts import ToolCall, ToolError
from pocketpilot.errors import ToolDefinitionError
from pocketpilot.executor import Tool, ToolRegistry, tool
from pocketpilot.harness.context import render_tool

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}, "mode": {"enum": ["r", "w"]},
                                           "depth": {"type": "integer", "minimum": 0, "default": 1}},
          "required": ["path"]}


def test_a_tool_from_a_name_a_schema_and_a_handler():
    seen = []

    def handler(**kwargs):  # noqa: ANN003, ANN202 - a foreign API's forwarding function
        seen.append(kwargs)
        return {"listed": kwargs["path"]}

    t = Tool.from_schema("ls", SCHEMA, handler, description="List a folder.", effect="read")
    assert t.spec.read_only and t.spec.parameters["required"] == ["path"]
    ok = asyncio.run(t.invoke({"path": "/tmp"}))
    assert ok.ok and ok.data == {"listed": "/tmp"}
    assert seen == [{"path": "/tmp"}]  # as given: no default filled in
    bad = asyncio.run(t.invoke({"path": "/tmp", "mode": "x"}))
    assert bad.error.code == "invalid_arguments" and "mode" in bad.error.message
    missing = asyncio.run(t.invoke({}))
    assert missing.error.code == "invalid_arguments" and "path" in missing.error.message
    assert ToolRegistry([t]).tools()[0].name == "ls"
    assert 'mode: "r"|"w"' in render_tool(t.spec)


def test_a_schema_tool_rejects_bad_definitions():
    with pytest.raises(ToolDefinitionError, match="object"):
        Tool.from_schema("x", {"type": "string"}, lambda: None)
    with pytest.raises(ToolDefinitionError, match="invalid parameters schema"):
        Tool.from_schema("x", {"type": "object", "properties": {"a": {"type": 12}}}, lambda: None)
    with pytest.raises(ToolDefinitionError, match="unknown semantics"):
        Tool.from_schema("x", SCHEMA, lambda **k: None, destructve=True)
    with pytest.raises(ToolDefinitionError, match="not callable"):
        Tool.from_schema("x", SCHEMA, "handler")  # type: ignore[arg-type]


def test_the_function_sees_the_arguments_the_planner_gave():
    seen = {}

    @tool
    def search(query: str, limit: int = 10, exact: bool = Field(False, description="Exact match.")) -> dict:
        """Search."""
        seen.update(query=query, limit=limit, exact=exact)
        return {}

    asyncio.run(search.invoke({"query": "a"}))
    assert seen == {"query": "a", "limit": 10, "exact": False}  # defaults are the function's own
    seen.clear()
    calls = []

    def forward(**kwargs):  # noqa: ANN003, ANN202
        calls.append(kwargs)

    @tool
    def wrapped(query: str, limit: int = 10) -> None:
        """A wrapper that forwards exactly what it got."""
        forward(query=query) if limit == 10 else forward(query=query, limit=limit)

    asyncio.run(wrapped.invoke({"query": "a", "limit": 3}))
    assert calls == [{"query": "a", "limit": 3}]


def test_a_world_that_reports_failures_as_strings_can_say_so():
    def classify(value):  # noqa: ANN001, ANN202
        if isinstance(value, str) and value.startswith(("Failed", "Error.")):
            return ToolError(code="world_error", message=value)
        return None

    @tool(effect="setting", setting="volume", classify=classify)
    def set_volume(level: int) -> str:
        """Set the volume."""
        return "Failed to set volume: device busy" if level > 10 else "ok"

    assert asyncio.run(set_volume.invoke({"level": 3})).ok
    failed = asyncio.run(set_volume.invoke({"level": 11}))
    assert not failed.ok and failed.error.code == "world_error" and failed.data.startswith("Failed")


class Mode(str, Enum):  # noqa: UP042 - the (str, Enum) a caller's own code declares, not StrEnum
    quiet = "quiet"
    loud = "loud"


def test_an_enum_parameter_shows_its_values_in_the_prompt():
    @tool(effect="setting", setting="mode")
    def set_mode(mode: Mode) -> dict:
        """Set the mode."""
        return {"mode": mode.value}

    assert "set_mode(mode: \"quiet\"|\"loud\")" in render_tool(set_mode.spec)
    assert asyncio.run(set_mode.invoke({"mode": "loud"})).data == {"mode": "loud"}


def test_a_tool_that_breaks_fails_its_call_and_the_session_goes_on():
    from pocketpilot.harness import Session
    from pocketpilot.harness.planners import ScriptedPlanner

    class World:
        @tool
        def broken(self) -> None:
            """Reach for something the world lacks."""
            raise AttributeError("'World' object has no attribute 'state'")

        @tool
        def fine(self) -> str:
            """Work."""
            return "ok"

    planner = ScriptedPlanner([{"kind": "tool_call", "calls": [{"name": "broken", "arguments": {}}]},
                               {"kind": "tool_call", "calls": [{"name": "fine", "arguments": {}}]},
                               {"kind": "finish", "summary": "done"}])
    episode = asyncio.run(Session(planner, ToolRegistry.from_object(World())).run("go"))
    assert episode.stop_reason == "finish"
    first = episode.steps[0].results[0]
    assert first.error.code == "tool_error" and "AttributeError" in first.error.message
    assert episode.steps[1].results[0].data == "ok"


def test_a_tool_can_declare_itself_concurrent_in_a_serial_world():
    import time

    @tool(concurrent=True)
    async def nap(s: float) -> float:
        """Sleep."""
        await asyncio.sleep(s)
        return s

    registry = ToolRegistry([nap])

    async def batch() -> float:
        t0 = time.monotonic()
        await asyncio.gather(*(registry.call(ToolCall(name="nap", arguments={"s": 0.2})) for _ in range(3)))
        return time.monotonic() - t0

    assert asyncio.run(batch()) < 0.5  # overlapped: the tool said it may


def test_a_schema_checked_once_still_rejects_a_bad_one_every_time():
    good = {"type": "object", "properties": {"n": {"type": "integer"}}}
    first = Tool.from_schema("a", good, lambda **kw: kw)
    again = Tool.from_schema("b", dict(good), lambda **kw: kw)  # the metaschema check is cached
    assert first.spec.parameters == again.spec.parameters
    bad = {"type": "object", "properties": {"n": {"type": 5}}}
    for _ in range(2):  # a failure is not cached as a pass
        with pytest.raises(ToolDefinitionError):
            Tool.from_schema("c", bad, lambda **kw: kw)
    odd = {"type": "object", "properties": {"n": {"type": "number", "default": Decimal("1.5")}}}  # not JSON
    assert Tool.from_schema("d", odd, lambda **kw: kw).spec.parameters["properties"]["n"]["default"] == 1.5
