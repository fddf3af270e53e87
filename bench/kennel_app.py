"""A dog-boarding team's kennel app, written outside pocketpilot."""

from typing import Any, Literal

from pydantic import BaseModel, Field

from pocketpilot.errors import ToolFailure
from pocketpilot.executor.tools import tool


class Booking(BaseModel):  # noqa: D101 (its fields say it; the module is copied as a team wrote it)
    id: str
    title: str
    body: str = ""


class KennelState(BaseModel):  # noqa: D101
    heating: bool = False
    feeding: Literal["off", "morning", "twice"] = "morning"
    bookings: list[Booking] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)
    next_id: int = 1


class Kennel:
    """Heating, the feeding plan, bookings and messages to owners."""

    name = "kennel"

    def __init__(self, state: KennelState) -> None:
        self.state = state

    @tool(effect="read", idempotent=True)
    async def kennel_status(self) -> dict[str, Any]:
        """Read the heating, the feeding plan and the bookings."""
        return {"heating": self.state.heating, "feeding": self.state.feeding,
                "bookings": [b.model_dump() for b in self.state.bookings]}

    @tool(effect="setting", setting="heating", idempotent=True)
    async def set_heating(self, on: bool) -> dict[str, Any]:
        """Switch the kennel heating on or off.

        Args:
            on: True for on.
        """
        self.state.heating = on
        return {"heating": on}

    @tool(effect="setting", setting="feeding", idempotent=True)
    async def set_feeding(self, plan: Literal["off", "morning", "twice"]) -> dict[str, Any]:
        """Set the feeding plan.

        Args:
            plan: off, morning or twice.
        """
        self.state.feeding = plan
        return {"feeding": plan}

    @tool(effect="create", name_arg="title", idempotent=False)
    async def book_stay(self, title: str = Field(min_length=1), body: str = "") -> dict[str, Any]:
        """Book a stay and return its id.

        Args:
            title: The dog's name.
            body: Notes for the staff.
        """
        booking = Booking(id=f"stay-{self.state.next_id}", title=title, body=body)
        self.state.bookings = [*self.state.bookings, booking]
        self.state.next_id += 1
        return {"id": booking.id}

    @tool(effect="send", destructive=True, open_world=True)
    async def message_owner(self, text: str = Field(min_length=1, max_length=500)) -> dict[str, Any]:
        """Send a message to the dog owners.

        Args:
            text: What it says.
        """
        self.state.messages = [*self.state.messages, text]
        return {"sent": len(self.state.messages)}

    @tool(effect="delete", destructive=True, id_arg="stay_id", idempotent=True)
    async def cancel_stay(self, stay_id: str) -> dict[str, Any]:
        """Cancel a stay by id.

        Args:
            stay_id: The stay id.
        """
        if not any(b.id == stay_id for b in self.state.bookings):
            raise ToolFailure("not_found", f"no stay {stay_id!r}")
        self.state.bookings = [b for b in self.state.bookings if b.id != stay_id]
        return {"cancelled": stay_id}


WORLD = {
    "apps": ["kennel_app:Kennel"],
    "state_model": "kennel_app:KennelState",
    "initial_state": {"bookings": [{"id": "stay-1", "title": "Rex", "body": "two nights"}], "next_id": 2},
    "sandbox": False,
}
