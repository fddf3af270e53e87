"""The notes app."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..state import Note
from ._base import App

__all__ = ["NotesApp"]


class NotesApp(App):
    """Create, list, search, read and delete notes."""

    name = "notes"
    domain = "productivity"
    section = "notes"

    def _find(self, note_id: str) -> Note:
        for note in self.state.notes.items:
            if note.id == note_id:
                return note
        raise ToolFailure("not_found", f"no note with id {note_id!r}")

    @tool(effect="create", name_arg="title", idempotent=False)
    async def create_note(
        self,
        title: str = Field(min_length=1, max_length=100, description="Note title."),
        body: str = Field("", max_length=2000, description="Note text."),
    ) -> dict[str, Any]:
        """Create a note and return its id.

        Args:
            title: Note title.
            body: Note text.
        """
        notes = self.state.notes
        note = Note(id=f"note-{notes.next_id}", title=title, body=body, created_at=self.state.now)
        notes.items = [*notes.items, note]
        notes.next_id += 1
        return {"id": note.id, "title": title}

    @tool(effect="read", idempotent=True)
    async def list_notes(self) -> list[dict[str, Any]]:
        """List all notes (id and title)."""
        return [{"id": n.id, "title": n.title} for n in self.state.notes.items]

    @tool(effect="read", idempotent=True)
    async def search_notes(
        self,
        query: str = Field(min_length=1, max_length=100, description="Text to look for (case-insensitive)."),
    ) -> list[dict[str, Any]]:
        """Find notes whose title or text contains the query.

        Args:
            query: Text to look for (case-insensitive).
        """
        q = query.lower()
        return [
            {"id": n.id, "title": n.title}
            for n in self.state.notes.items
            if q in n.title.lower() or q in n.body.lower()
        ]

    @tool(effect="read", id_arg="note_id", idempotent=True)
    async def read_note(self, note_id: str) -> dict[str, Any]:
        """Read one note by id.

        Args:
            note_id: The note id, e.g. note-1.
        """
        return self._find(note_id).model_dump(mode="json")

    @tool(effect="delete", destructive=True, id_arg="note_id", idempotent=True)
    async def delete_note(self, note_id: str) -> dict[str, Any]:
        """Delete a note by id.

        Args:
            note_id: The note id, e.g. note-1.
        """
        note = self._find(note_id)
        self.state.notes.items = [n for n in self.state.notes.items if n.id != note.id]
        return {"deleted": note.id}
