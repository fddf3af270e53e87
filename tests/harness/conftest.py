from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from _recall_support import policy

from pocketpilot.errors import ToolFailure
from pocketpilot.executor import ToolRegistry, tool
from pocketpilot.memory import SqliteMemory


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


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemory]:
    """An empty memory store under the recall tests' access policy (``_recall_support``), closed after the test."""
    s = SqliteMemory(tmp_path / "mem.db", policy())
    try:
        yield s
    finally:
        s.close()
