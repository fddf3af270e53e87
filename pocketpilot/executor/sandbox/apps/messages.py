"""SMS: send to a number or a contact, read the inbox."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from ...tools import tool
from ..state import Message
from ._base import App
from .contacts import digits, resolve_contact

__all__ = ["MessagesApp"]

_NUMBER = re.compile(r"^\+?[\d\s().-]{3,}$")


class MessagesApp(App):
    """Send SMS and read received ones."""

    name = "messages"
    domain = "communication"
    section = "messages"

    @tool(effect="send", destructive=True, idempotent=False, open_world=True)
    async def send_sms(
        self,
        to: str = Field(
            min_length=1, max_length=80, description="A phone number, or a contact's name or nickname."
        ),
        body: str = Field(min_length=1, max_length=480, description="The message text."),
    ) -> dict[str, Any]:
        """Send an SMS to a phone number or a contact name.

        Args:
            to: A phone number, or a contact's name or nickname.
            body: The message text.
        """
        state = self.state
        if _NUMBER.match(to.strip()):
            number = to.strip()
            known = [c for c in state.contacts.items if digits(c.phone) == digits(number)]
            contact = known[0].name if known else None
        else:
            found = resolve_contact(state, to)
            number, contact = found.phone, found.name
        msgs = state.messages
        message = Message(id=f"sms-{msgs.next_id}", number=number, contact=contact, body=body, at=state.now)
        msgs.sent = [*msgs.sent, message]
        msgs.next_id += 1
        return {"id": message.id, "to": contact or number, "number": number, "status": "sent"}

    @tool(effect="read", idempotent=True)
    async def read_inbox(
        self,
        sender: str | None = Field(
            None, max_length=80, description="Only messages from this contact name or number."
        ),
        unread_only: bool = False,
        limit: int = Field(10, ge=1, le=50, description="Most messages to return."),
    ) -> list[dict[str, Any]]:
        """Read received SMS, newest first.

        Args:
            sender: Only messages from this contact name or number.
            unread_only: Only unread messages.
            limit: Most messages to return.
        """
        state = self.state
        items = sorted(state.messages.inbox, key=lambda m: m.at, reverse=True)
        if sender:
            if _NUMBER.match(sender.strip()):
                items = [m for m in items if digits(m.number) == digits(sender)]
            else:
                number = digits(resolve_contact(state, sender).phone)
                items = [m for m in items if digits(m.number) == number]
        if unread_only:
            items = [m for m in items if not m.read]
        return [m.model_dump(mode="json") for m in items[:limit]]
