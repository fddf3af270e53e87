"""A conversation: one session answering request after request, each with the earlier ones in view.

A companion app is a conversation: "stop the casting from before" must resolve against what
the earlier turn did. The session carries its turns itself (:attr:`Session.turns`); this is
the explicit form, for code that wants to say so, read the turns back, or start over.
"""

from __future__ import annotations

from ..contracts import Episode
from .session import Session

__all__ = ["Conversation"]


class Conversation:
    """Send requests to one session in turn; each sees the earlier turns (within the conversation budget)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    async def send(self, request: str) -> Episode:
        """Run the next request of the conversation."""
        return await self.session.run(request)

    @property
    def episodes(self) -> list[Episode]:
        """The turns so far, oldest first."""
        return list(self.session.turns)

    def reset(self) -> None:
        """Start a new conversation on the same session."""
        self.session.forget()
