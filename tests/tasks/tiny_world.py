"""A tiny user world for the generator tests: one pydantic state, one app class, one tool function."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from pocketpilot.errors import ToolFailure
from pocketpilot.executor.tools import tool


class Item(BaseModel):
    id: str
    title: str
    body: str = ""


class HomeState(BaseModel):
    lamp: bool = False
    sent: list[str] = Field(default_factory=list)
    fan: Literal["off", "low", "high"] = "off"
    items: list[Item] = Field(default_factory=list)
    next_id: int = 1


class HomeApp:
    """A lamp, a fan and a list of items."""

    name = "home"

    def __init__(self, state: HomeState) -> None:
        self.state = state

    @tool(effect="read", idempotent=True)
    async def home_status(self) -> dict[str, Any]:
        """Read the lamp, the fan and how many items there are."""
        return {"lamp": self.state.lamp, "fan": self.state.fan, "items": len(self.state.items)}

    @tool(effect="setting", setting="lamp", idempotent=True)
    async def switch_lamp(self, on: bool) -> dict[str, Any]:
        """Switch the lamp on or off.

        Args:
            on: True for on.
        """
        self.state.lamp = on
        return {"lamp": on}

    @tool(effect="setting", setting="fan", idempotent=True)
    async def fan_speed(self, speed: Literal["off", "low", "high"]) -> dict[str, Any]:
        """Set the fan speed.

        Args:
            speed: off, low or high.
        """
        self.state.fan = speed
        return {"fan": speed}

    @tool(effect="create", name_arg="title", idempotent=False)
    async def add_item(self, title: str = Field(min_length=1), body: str = "") -> dict[str, Any]:
        """Add an item and return its id.

        Args:
            title: Item title.
            body: Item text.
        """
        item = Item(id=f"item-{self.state.next_id}", title=title, body=body)
        self.state.items = [*self.state.items, item]
        self.state.next_id += 1
        return {"id": item.id}

    @tool(effect="send", destructive=True, open_world=True)
    async def notify(self, text: str = Field(min_length=1, max_length=500)) -> dict[str, Any]:
        """Send a notification to the household.

        Args:
            text: What it says.
        """
        self.state.sent = [*self.state.sent, text]
        return {"sent": len(self.state.sent)}

    @tool(effect="delete", destructive=True, id_arg="item_id", idempotent=True)
    async def drop_item(self, item_id: str) -> dict[str, Any]:
        """Delete an item by id.

        Args:
            item_id: The item id.
        """
        if not any(i.id == item_id for i in self.state.items):
            raise ToolFailure("not_found", f"no item {item_id!r}")
        self.state.items = [i for i in self.state.items if i.id != item_id]
        return {"deleted": item_id}


WORLD = {
    "apps": ["tiny_world:HomeApp"],
    "state_model": "tiny_world:HomeState",
    "initial_state": {"items": [{"id": "item-1", "title": "Seeds", "body": "tomatoes"}], "next_id": 2},
    "sandbox": False,
}


@tool(effect="read", idempotent=True)
async def home_clock() -> dict[str, str]:
    """Read the home's clock."""
    return {"time": "09:30"}


def make_garden(state: HomeState) -> Any:
    """A factory: called with the state, returns the tools it makes over it."""

    @tool(effect="setting", setting="sprinkler", idempotent=True)
    async def sprinkler(minutes: int = Field(ge=5, le=60)) -> dict[str, int]:
        """Run the sprinkler.

        Args:
            minutes: How long.
        """
        state.fan = "low" if minutes < 30 else "high"
        return {"minutes": minutes}

    return [sprinkler]


FULL_WORLD = {**WORLD, "apps": ["tiny_world:HomeApp", "tiny_world:home_clock", "tiny_world:make_garden"]}
