"""The email app's mailbox: messages by folder, drafts."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import Field

from ._base import Section

__all__ = ["Email", "EmailDraft", "EmailState", "Folder", "default_email"]

Folder = Literal["inbox", "sent", "archive", "spam", "trash"]


class Email(Section):
    """One message in a folder; ``sender`` and ``to`` are addresses."""

    id: str
    folder: Folder = "inbox"
    sender: str
    sender_name: str = ""
    to: list[str] = Field(default_factory=list)
    cc: list[str] = Field(default_factory=list)
    title: str
    """The subject line."""
    body: str = ""
    at: datetime
    read: bool = True
    flagged: bool = False


class EmailDraft(Section):
    """An unsent message; may lack recipients until it is sent."""

    id: str
    to: list[str] = Field(default_factory=list)
    title: str = ""
    """The subject line."""
    body: str = ""
    updated_at: datetime


class EmailState(Section):
    """The mailbox of the phone's one account."""

    account: str = "me@example.com"
    items: list[Email] = Field(default_factory=list)
    drafts: list[EmailDraft] = Field(default_factory=list)
    next_id: int = 1


def default_email(now: datetime) -> EmailState:
    """A week of mail: a work thread, a receipt, a newsletter, spam and one draft."""
    h = timedelta(hours=1)
    return EmailState(
        items=[
            Email(id="mail-1", sender="priya@example.com", sender_name="Priya Raman", to=["me@example.com"],
                  title="Q1 report draft", body="Here is the draft of the Q1 report. Comments by Monday?",
                  at=now - 2 * h, read=False),
            Email(id="mail-2", sender="orders@shopmart.example", sender_name="ShopMart",
                  to=["me@example.com"], title="Your order order-13 has shipped",
                  body="Your order of USB-C Charger has shipped and arrives Tuesday.", at=now - 20 * h),
            Email(id="mail-3", sender="news@citybikes.example", sender_name="City Bikes",
                  to=["me@example.com"], title="Spring rides newsletter", body="Ten routes for spring.",
                  at=now - 30 * h),
            Email(id="mail-4", sender="bob@example.com", sender_name="Bob Martin",
                  to=["me@example.com"], cc=["alice.chen@example.com"], title="Saturday hike",
                  body="Meet at the trailhead at 8? Alice is in.", at=now - 5 * h, read=False, flagged=True),
            Email(id="mail-5", sender="prize@lucky-win.example", sender_name="Lucky Win", folder="spam",
                  to=["me@example.com"], title="You won!", body="Claim your prize now.", at=now - 50 * h),
            Email(id="mail-6", sender="me@example.com", sender_name="Me", folder="sent",
                  to=["dana.lee@example.com"], title="Flight details", body="Landing Friday 18:40.",
                  at=now - 72 * h),
        ],
        drafts=[
            EmailDraft(id="draft-7", to=["jordan.kim@example.com"], title="Lunch next week",
                       body="How about Wednesday?", updated_at=now - 26 * h),
        ],
        next_id=8,
    )
