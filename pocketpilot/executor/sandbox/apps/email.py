"""The email app: one account's folders, drafts, and sending to addresses or contacts."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..sections.email import Email, EmailDraft, Folder
from ._base import App
from ._records import find, issue_id
from .contacts import resolve_contact

__all__ = ["EmailApp"]

_ADDRESS = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
Recipients = list[str]


def _summary(m: Email) -> dict[str, Any]:
    return {"id": m.id, "folder": m.folder, "from": m.sender_name or m.sender, "subject": m.title,
            "at": m.at.isoformat(), "read": m.read, "flagged": m.flagged}


class EmailApp(App):
    """Read, file, draft and send email."""

    name = "email"
    domain = "communication"
    section = "email"
    package = "com.google.android.gm"
    label = "Gmail"

    def _address(self, who: str) -> str:
        """An address as typed, or the address of the contact a name designates."""
        who = who.strip()
        if "@" in who:
            if not _ADDRESS.match(who):
                raise ToolFailure("invalid_arguments", f"{who!r} is not an email address")
            return who.lower()
        contact = resolve_contact(self.state, who)
        if not contact.email:
            raise ToolFailure("precondition_failed", f"{contact.name} has no email address in contacts")
        return contact.email

    def _deliver(self, to: list[str], cc: list[str], subject: str, body: str) -> Email:
        state = self.state
        box = state.email
        to_addresses, cc_addresses = [self._address(t) for t in to], [self._address(c) for c in cc]
        sent = Email(id=issue_id(box, "mail"), folder="sent", sender=box.account, sender_name="Me",
                     to=to_addresses, cc=cc_addresses, title=subject, body=body, at=state.now)
        box.items = [*box.items, sent]
        return sent

    def _email(self, email_id: str) -> Email:
        return find(self.state.email.items, email_id, "email")

    @tool(effect="read", idempotent=True)
    async def list_emails(
        self,
        folder: Folder = "inbox",
        unread_only: bool = False,
        limit: int = Field(10, ge=1, le=50, description="Most emails to return."),
    ) -> list[dict[str, Any]]:
        """List a folder's emails, newest first, to find the one the user means before acting on it.

        Args:
            folder: inbox, sent, archive, spam or trash.
            unread_only: Only unread emails.
            limit: Most emails to return.
        """
        items = [m for m in self.state.email.items if m.folder == folder and (m.read is False or not unread_only)]
        return [_summary(m) for m in sorted(items, key=lambda m: m.at, reverse=True)[:limit]]

    @tool(effect="read", id_arg="email_id", idempotent=True)
    async def read_email(self, email_id: str = Field(description="The email id, e.g. mail-1.")) -> dict[str, Any]:
        """Read one email in full (body, recipients); it does not mark it read.

        Args:
            email_id: The email id, e.g. mail-1.
        """
        data = self._email(email_id).model_dump(mode="json")
        data["subject"] = data.pop("title")  # the state calls it title, like every record's human name
        return data

    @tool(effect="read", idempotent=True)
    async def search_emails(
        self,
        query: str = Field(min_length=1, max_length=100, description="Text in the sender, subject or body."),
        folder: Folder | None = None,
    ) -> list[dict[str, Any]]:
        """Find emails whose sender, subject or body contains the text (case-insensitive).

        Args:
            query: Text in the sender, subject or body.
            folder: Only this folder; all folders when omitted.
        """
        q = query.lower()
        return [
            _summary(m) for m in self.state.email.items
            if (folder is None or m.folder == folder)
            and any(q in s.lower() for s in (m.sender, m.sender_name, m.title, m.body))
        ]

    @tool(effect="send", destructive=True, idempotent=False, open_world=True, name_arg="subject")
    async def send_email(
        self,
        to: Recipients = Field(min_length=1, max_length=10, description="Addresses or contact names."),
        subject: str = Field(min_length=1, max_length=150, description="Subject line."),
        body: str = Field(min_length=1, max_length=5000, description="Message text."),
        cc: Recipients = Field(default_factory=list, max_length=10, description="Copy recipients."),
    ) -> dict[str, Any]:
        """Send a new email; a sent email cannot be recalled.

        Args:
            to: Addresses or contact names.
            subject: Subject line.
            body: Message text.
            cc: Copy recipients.
        """
        sent = self._deliver(to, cc, subject, body)
        return {"id": sent.id, "to": sent.to, "cc": sent.cc, "status": "sent"}

    @tool(effect="send", destructive=True, idempotent=False, open_world=True, id_arg="email_id")
    async def reply_email(
        self,
        email_id: str = Field(description="The email to answer, e.g. mail-4."),
        body: str = Field(min_length=1, max_length=5000, description="Reply text."),
        reply_all: bool = Field(False, description="Also reply to everyone in cc."),
    ) -> dict[str, Any]:
        """Reply to an email's sender (and its cc list with reply_all).

        Args:
            email_id: The email to answer, e.g. mail-4.
            body: Reply text.
            reply_all: Also reply to everyone in cc.
        """
        original = self._email(email_id)
        if original.folder == "sent":
            raise ToolFailure("precondition_failed", f"{email_id} is one you sent; use send_email to write again")
        cc = [c for c in original.cc if c != self.state.email.account] if reply_all else []
        subject = original.title if original.title.startswith("Re: ") else f"Re: {original.title}"
        sent = self._deliver([original.sender], cc, subject, body)
        return {"id": sent.id, "to": sent.to, "cc": sent.cc, "subject": subject, "status": "sent"}

    @tool(effect="send", destructive=True, idempotent=False, open_world=True, id_arg="email_id")
    async def forward_email(
        self,
        email_id: str = Field(description="The email to pass on."),
        to: Recipients = Field(min_length=1, max_length=10, description="Addresses or contact names."),
        note: str = Field("", max_length=2000, description="Text above the forwarded message."),
    ) -> dict[str, Any]:
        """Forward an email, with an optional note, to other people.

        Args:
            email_id: The email to pass on.
            to: Addresses or contact names.
            note: Text above the forwarded message.
        """
        original = self._email(email_id)
        body = f"{note}\n\n---------- Forwarded message ----------\n{original.body}".lstrip()
        sent = self._deliver(to, [], f"Fwd: {original.title}", body)
        return {"id": sent.id, "to": sent.to, "status": "sent"}

    @tool(effect="create", name_arg="subject", idempotent=False)
    async def save_draft(
        self,
        subject: str = Field(min_length=1, max_length=150, description="Subject line."),
        body: str = Field("", max_length=5000, description="Message text so far."),
        to: Recipients = Field(default_factory=list, max_length=10, description="Addresses or contact names."),
    ) -> dict[str, Any]:
        """Save an email as a draft to finish or send later.

        Args:
            subject: Subject line.
            body: Message text so far.
            to: Addresses or contact names.
        """
        state = self.state
        addresses = [self._address(t) for t in to]
        draft = EmailDraft(id=issue_id(state.email, "draft"), to=addresses, title=subject, body=body,
                           updated_at=state.now)
        state.email.drafts = [*state.email.drafts, draft]
        return draft.model_dump(mode="json")

    @tool(effect="read", idempotent=True)
    async def list_drafts(self) -> list[dict[str, Any]]:
        """List unsent drafts (id, recipients, subject)."""
        return [{"id": d.id, "to": d.to, "subject": d.title} for d in self.state.email.drafts]

    @tool(effect="send", destructive=True, idempotent=False, open_world=True, id_arg="draft_id")
    async def send_draft(self, draft_id: str = Field(description="The draft id, e.g. draft-7.")) -> dict[str, Any]:
        """Send a saved draft as it is; it leaves the drafts.

        Args:
            draft_id: The draft id, e.g. draft-7.
        """
        box = self.state.email
        draft = find(box.drafts, draft_id, "draft")
        if not draft.to:
            raise ToolFailure("precondition_failed", f"{draft_id} has no recipients; save it again with some")
        sent = self._deliver(draft.to, [], draft.title, draft.body)
        box.drafts = [d for d in box.drafts if d.id != draft_id]
        return {"id": sent.id, "to": sent.to, "status": "sent", "draft": draft_id}

    @tool(effect="delete", destructive=True, id_arg="draft_id", idempotent=True)
    async def delete_draft(self, draft_id: str = Field(description="The draft id.")) -> dict[str, Any]:
        """Discard a draft for good.

        Args:
            draft_id: The draft id.
        """
        box = self.state.email
        find(box.drafts, draft_id, "draft")
        box.drafts = [d for d in box.drafts if d.id != draft_id]
        return {"deleted": draft_id}

    @tool(effect="update", id_arg="email_id", idempotent=True)
    async def mark_email_read(
        self, email_id: str = Field(description="The email id."), read: bool = True
    ) -> dict[str, Any]:
        """Mark an email read, or unread to come back to it.

        Args:
            email_id: The email id.
            read: False marks it unread.
        """
        mail = self._email(email_id)
        mail.read = read
        return {"id": mail.id, "read": read}

    @tool(effect="update", id_arg="email_id", idempotent=True)
    async def flag_email(
        self, email_id: str = Field(description="The email id."), flagged: bool = True
    ) -> dict[str, Any]:
        """Flag an email as needing follow-up, or clear the flag.

        Args:
            email_id: The email id.
            flagged: False clears the flag.
        """
        mail = self._email(email_id)
        mail.flagged = flagged
        return {"id": mail.id, "flagged": flagged}

    @tool(effect="update", id_arg="email_id", idempotent=True)
    async def move_email(
        self,
        email_id: str = Field(description="The email id."),
        folder: Literal["inbox", "archive", "spam", "trash"] = Field(description="Where to file it."),
    ) -> dict[str, Any]:
        """File an email in another folder (archive it, report spam, move it to trash); reversible.

        Args:
            email_id: The email id.
            folder: inbox, archive, spam or trash.
        """
        mail = self._email(email_id)
        if mail.folder == "sent":
            raise ToolFailure("precondition_failed", "sent emails stay in sent; delete_email removes them")
        mail.folder = folder
        return {"id": mail.id, "folder": folder}

    @tool(effect="delete", destructive=True, id_arg="email_id", idempotent=True)
    async def delete_email(self, email_id: str = Field(description="The email id.")) -> dict[str, Any]:
        """Delete an email permanently (move_email to trash keeps it recoverable).

        Args:
            email_id: The email id.
        """
        box = self.state.email
        self._email(email_id)
        box.items = [m for m in box.items if m.id != email_id]
        return {"deleted": email_id}
