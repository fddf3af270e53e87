from __future__ import annotations

import asyncio
from typing import Annotated, Literal

import pytest
from pydantic import Field

from pocketpilot.contracts import ToolCall
from pocketpilot.errors import ToolDefinitionError, ToolFailure
from pocketpilot.executor import Tool, ToolRegistry, tool


@tool
def add(a: int, b: int = 2) -> int:
    """Add two integers.

    This paragraph is for humans only.

    Args:
        a: the first addend.
        b: the second addend,
            continued on a second line.
    """
    return a + b


@tool(name="greet", destructive=True)
async def greet_user(name: str = Field(min_length=1), tone: Literal["warm", "dry"] = "warm") -> str:
    """Greet someone."""
    await asyncio.sleep(0)
    return f"{tone} hello {name}"


def test_schema_from_signature_and_docstring():
    spec = add.spec
    assert spec.name == "add" and spec.description == "Add two integers."
    props = spec.parameters["properties"]
    assert props["a"]["type"] == "integer" and props["a"]["description"] == "the first addend."
    assert props["b"]["default"] == 2
    assert props["b"]["description"] == "the second addend, continued on a second line."
    assert spec.parameters["required"] == ["a"]
    assert spec.parameters["additionalProperties"] is False


def test_async_tool_with_field_constraints():
    spec = greet_user.spec
    assert spec.name == "greet" and spec.destructive
    assert spec.parameters["properties"]["tone"]["enum"] == ["warm", "dry"]
    assert asyncio.run(greet_user.invoke({"name": "Ann"})).data == "warm hello Ann"
    bad = asyncio.run(greet_user.invoke({"name": ""}))
    assert bad.error.code == "invalid_arguments" and "name" in bad.error.message


def test_invoke_normalizes_results_and_errors():
    assert asyncio.run(add.invoke({"a": 1})).data == 3
    extra = asyncio.run(add.invoke({"a": 1, "c": 3}))
    assert extra.error.code == "invalid_arguments"

    @tool
    def fails(code: str) -> None:
        """Fail with a code."""
        raise ToolFailure(code, "nope", data={"hint": 1})

    result = asyncio.run(fails.invoke({"code": "conflict"}))
    assert (result.ok, result.error.code, result.data) == (False, "conflict", {"hint": 1})

    @tool
    def bug() -> None:
        """A bug."""
        raise RuntimeError("boom")

    broken = asyncio.run(bug.invoke({}))  # a tool's bug fails that call, never the session
    assert (broken.ok, broken.error.code) == (False, "tool_error")
    assert broken.error.message == "bug: RuntimeError: boom"

    @tool
    def attr() -> None:
        """A wrapper calling into a world that lacks something."""
        return None.missing  # type: ignore[attr-defined]

    assert asyncio.run(attr.invoke({})).error.message.startswith("attr: AttributeError:")


def test_definition_errors():
    def untyped(x):  # noqa: ANN001
        return x

    with pytest.raises(ToolDefinitionError, match="no type annotation"):
        Tool(untyped)

    def star(*args: int) -> None:
        return None

    with pytest.raises(ToolDefinitionError):
        Tool(star)
    with pytest.raises(ToolDefinitionError, match="duplicate"):
        ToolRegistry([add, add])


def test_methods_bind_per_instance():
    class Counter:
        def __init__(self) -> None:
            self.n = 0

        @tool
        def bump(self, by: int = 1) -> int:
            """Bump."""
            self.n += by
            return self.n

    a, b = Counter(), Counter()
    ra, rb = ToolRegistry.from_object(a), ToolRegistry.from_object(b)
    asyncio.run(ra.call(ToolCall(name="bump", arguments={"by": 5})))
    assert (a.n, b.n) == (5, 0)
    assert rb.names() == ["bump"] and "self" not in rb.tools()[0].parameters["properties"]


def test_registry_unknown_tool_and_subset():
    reg = ToolRegistry([add, greet_user])
    result = asyncio.run(reg.call(ToolCall(name="nope")))
    assert result.error.code == "unknown_tool" and "add" in result.error.message
    assert reg.subset(["greet"]).names() == ["greet"]


def test_annotated_constraints_and_field_default_descriptions():

    @tool
    def dim(level: Annotated[int, Field(ge=0, le=100)], label: str = Field(default="x", max_length=5)) -> int:
        """Dim the screen.

        Args:
            level: brightness percent.
            label: a short tag.
        """
        return level

    props = dim.spec.parameters["properties"]
    assert (props["level"]["minimum"], props["level"]["maximum"]) == (0, 100)
    assert props["level"]["description"] == "brightness percent."
    assert props["label"]["description"] == "a short tag." and props["label"]["maxLength"] == 5
    assert asyncio.run(dim.invoke({"level": 101})).error.code == "invalid_arguments"
    assert asyncio.run(dim.invoke({"level": 50})).data == 50
