from __future__ import annotations

import asyncio
from typing import Literal

import pytest

from pocketpilot.errors import ToolFailure
from pocketpilot.executor import ToolRegistry, tool


class Toys:
    """A tiny app with sync, async, slow, failing and destructive tools."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.lamp = False

    @tool
    def set_lamp(self, on: bool) -> dict:
        """Turn the lamp on or off."""
        self.log.append(f"lamp={on}")
        self.lamp = on
        return {"lamp": on}

    @tool
    async def sleep_echo(self, text: str, delay: float = 0.0) -> str:
        """Echo text after a delay."""
        await asyncio.sleep(delay)
        self.log.append(f"echo={text}")
        return text

    @tool
    def convert(self, value: float, unit: Literal["km", "mi"]) -> float:
        """Convert between km and miles; rejects a zero value."""
        if value == 0:
            raise ToolFailure("zero_value", "cannot convert zero")
        return value * (0.621371 if unit == "km" else 1.609344)

    @tool(destructive=True)
    def wipe(self) -> str:
        """Delete everything."""
        self.log.append("wiped")
        return "wiped"


@pytest.fixture
def toys() -> Toys:
    return Toys()


@pytest.fixture
def registry(toys: Toys) -> ToolRegistry:
    return ToolRegistry.from_object(toys, concurrent=True)  # the toys are thread-safe, and say so
