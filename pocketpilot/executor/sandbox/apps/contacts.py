"""The address book, and the name resolution SMS shares with it."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..state import Contact, PhoneState
from ._base import App

__all__ = ["ContactsApp", "digits", "resolve_contact"]


def digits(number: str) -> str:
    """The digits of a phone number, for comparing numbers written differently."""
    return re.sub(r"\D", "", number)


def resolve_contact(state: PhoneState, name: str) -> Contact:
    """The one contact ``name`` designates, as a real dialer resolves it.

    An exact (case-insensitive) name or nickname wins; otherwise a unique partial match.

    Raises:
        ToolFailure: ``not_found`` for no match, ``ambiguous`` (with the candidates in ``data``)
            for several.
    """
    wanted = name.strip().lower()
    if not wanted:
        raise ToolFailure("invalid_arguments", "an empty name matches nobody")
    items = state.contacts.items
    exact = [c for c in items if c.name.lower() == wanted or (c.nickname or "").lower() == wanted]
    if len(exact) == 1:
        return exact[0]
    partial = exact or [c for c in items if wanted in c.name.lower() or wanted in (c.nickname or "").lower()]
    if not partial:
        raise ToolFailure("not_found", f"no contact matches {name!r}")
    if len(partial) > 1:
        names = [c.name for c in partial]
        raise ToolFailure(
            "ambiguous",
            f"{len(partial)} contacts match {name!r}: {', '.join(names)}; say which one",
            {"candidates": [{"id": c.id, "name": c.name} for c in partial]},
        )
    return partial[0]


class ContactsApp(App):
    """Look up and list contacts."""

    name = "contacts"
    domain = "communication"
    section = "contacts"

    @tool(effect="read", name_arg="name", idempotent=True)
    async def lookup_contact(
        self,
        name: str = Field(
            min_length=1, max_length=80, description='Full or partial name, or a nickname such as "Mom".'
        ),
    ) -> dict[str, Any]:
        """Find one contact by name or nickname; fails with the candidates if several match.

        Args:
            name: Full or partial name, or a nickname such as "Mom".
        """
        return resolve_contact(self.state, name).model_dump()

    @tool(effect="read", idempotent=True)
    async def list_contacts(self) -> list[dict[str, Any]]:
        """List all contacts (id, name, phone)."""
        return [{"id": c.id, "name": c.name, "phone": c.phone} for c in self.state.contacts.items]
