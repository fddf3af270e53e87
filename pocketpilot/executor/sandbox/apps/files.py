"""Files: browse, organize, trash and restore, share files in the phone's storage."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..sections.files import FileItem, FileKind, FileShare, FolderItem
from ..state import PhoneState
from ._base import App
from ._records import find, issue_id
from .contacts import resolve_contact

__all__ = ["FilesApp", "used_kb"]


def used_kb(state: PhoneState) -> int:
    """Storage taken by files (trash included: it still occupies space) and gallery media."""
    return sum(f.size_kb for f in state.files.items) + sum(m.size_kb for m in state.gallery.items)


def _file(f: FileItem) -> dict[str, Any]:
    return {"id": f.id, "name": f.name, "kind": f.kind, "folder_id": f.folder_id, "size_kb": f.size_kb,
            "modified_at": f.modified_at.isoformat()}


class FilesApp(App):
    """A file manager over the phone's storage."""

    name = "files"
    domain = "files_media"
    section = "files"
    package = "com.google.android.apps.nbu.files"
    label = "Files"

    def _item(self, file_id: str, *, trashed: bool = False) -> FileItem:
        item = find(self.state.files.items, file_id, "file")
        if item.trashed != trashed:
            where = "in the trash; restore it first" if item.trashed else "not in the trash"
            raise ToolFailure("precondition_failed", f"{item.name} is {where}")
        return item

    def _folder(self, folder_id: str) -> FolderItem:
        return find(self.state.files.folders, folder_id, "folder")

    @tool(effect="read", idempotent=True)
    async def list_files(
        self, folder_id: str | None = Field(None, description="The folder id; the root's folders if omitted.")
    ) -> dict[str, Any]:
        """List a folder's subfolders and files (trash excluded), to find the id other tools take.

        Args:
            folder_id: The folder id; the root's folders if omitted.
        """
        files = self.state.files
        if folder_id is not None:
            self._folder(folder_id)
        return {
            "folder_id": folder_id,
            "folders": [f.model_dump() for f in files.folders if f.parent_id == folder_id],
            "files": [_file(f) for f in files.items if f.folder_id == folder_id and not f.trashed],
        }

    @tool(effect="read", id_arg="file_id", idempotent=True)
    async def get_file_info(self, file_id: str = Field(description="The file id, e.g. file-4.")) -> dict[str, Any]:
        """Read a file's kind, size, folder and last change.

        Args:
            file_id: The file id, e.g. file-4.
        """
        item = find(self.state.files.items, file_id, "file")
        return {**_file(item), "folder": self._folder(item.folder_id).name, "trashed": item.trashed}

    @tool(effect="read", idempotent=True)
    async def search_files(
        self,
        query: str = Field("", max_length=80, description="Text in the file name; empty for any."),
        kind: FileKind | None = None,
    ) -> list[dict[str, Any]]:
        """Find files anywhere by name and kind (trash excluded), largest first.

        Args:
            query: Text in the file name; empty for any.
            kind: Only this kind of file.
        """
        q = query.strip().lower()
        rows = [f for f in self.state.files.items if not f.trashed and q in f.name.lower() and kind in (None, f.kind)]
        return [_file(f) for f in sorted(rows, key=lambda f: f.size_kb, reverse=True)]

    @tool(effect="create", name_arg="name", idempotent=False)
    async def create_folder(
        self,
        name: str = Field(min_length=1, max_length=80, description="The new folder's name."),
        parent_id: str | None = Field(None, description="Folder to create it in; the root if omitted."),
    ) -> dict[str, Any]:
        """Create a folder to organize files into.

        Args:
            name: The new folder's name.
            parent_id: Folder to create it in; the root if omitted.
        """
        files = self.state.files
        if parent_id is not None:
            self._folder(parent_id)
        if any(f.name.lower() == name.strip().lower() and f.parent_id == parent_id for f in files.folders):
            raise ToolFailure("conflict", f"a folder named {name!r} already exists there")
        folder = FolderItem(id=issue_id(files, "folder"), name=name.strip(), parent_id=parent_id)
        files.folders = [*files.folders, folder]
        return folder.model_dump()

    @tool(effect="update", id_arg="file_id", name_arg="new_name", idempotent=True)
    async def rename_file(
        self,
        file_id: str = Field(description="The file id."),
        new_name: str = Field(min_length=1, max_length=120, description="The new name, extension included."),
    ) -> dict[str, Any]:
        """Rename a file.

        Args:
            file_id: The file id.
            new_name: The new name, extension included.
        """
        item = self._item(file_id)
        clash = [f for f in self.state.files.items if f.folder_id == item.folder_id and f.id != item.id
                 and not f.trashed and f.name.lower() == new_name.strip().lower()]
        if clash:
            raise ToolFailure("conflict", f"{new_name!r} already exists in that folder")
        item.name, item.modified_at = new_name.strip(), self.state.now
        return _file(item)

    @tool(effect="update", id_arg="file_id", idempotent=True)
    async def move_file(
        self, file_id: str = Field(description="The file id."), folder_id: str = Field(description="Target folder id.")
    ) -> dict[str, Any]:
        """Move a file into another folder.

        Args:
            file_id: The file id.
            folder_id: Target folder id.
        """
        item = self._item(file_id)
        item.folder_id = self._folder(folder_id).id
        return _file(item)

    @tool(effect="create", id_arg="file_id", idempotent=False)
    async def copy_file(
        self, file_id: str = Field(description="The file id."), folder_id: str = Field(description="Target folder id.")
    ) -> dict[str, Any]:
        """Copy a file into a folder (the copy takes storage space of its own).

        Args:
            file_id: The file id.
            folder_id: Target folder id.
        """
        state = self.state
        item, folder = self._item(file_id), self._folder(folder_id)
        if used_kb(state) + item.size_kb > state.files.capacity_mb * 1000:
            raise ToolFailure("precondition_failed", "not enough free storage; empty the trash or delete files")
        name = item.name if folder.id != item.folder_id else f"Copy of {item.name}"
        copy = item.model_copy(update={"id": issue_id(state.files, "file"), "folder_id": folder.id, "name": name,
                                       "modified_at": state.now})
        state.files.items = [*state.files.items, copy]
        return _file(copy)

    @tool(effect="delete", destructive=False, id_arg="file_id", idempotent=True)  # to the trash: undoable
    async def delete_file(self, file_id: str = Field(description="The file id.")) -> dict[str, Any]:
        """Move a file to the trash (restore_file brings it back until the trash is emptied).

        Args:
            file_id: The file id.
        """
        item = self._item(file_id)
        item.trashed = True
        return {"trashed": item.id, "name": item.name}

    @tool(effect="read", idempotent=True)
    async def list_trash(self) -> list[dict[str, Any]]:
        """List files in the trash."""
        return [_file(f) for f in self.state.files.items if f.trashed]

    @tool(effect="update", id_arg="file_id", idempotent=True)
    async def restore_file(self, file_id: str = Field(description="A trashed file's id.")) -> dict[str, Any]:
        """Bring a file back from the trash to its folder.

        Args:
            file_id: A trashed file's id.
        """
        item = self._item(file_id, trashed=True)
        item.trashed = False
        return _file(item)

    @tool(effect="delete", destructive=True, idempotent=True)
    async def empty_trash(self) -> dict[str, Any]:
        """Delete every trashed file for good, freeing its space."""
        files = self.state.files
        gone = [f for f in files.items if f.trashed]
        files.items = [f for f in files.items if not f.trashed]
        return {"deleted": [f.id for f in gone], "freed_kb": sum(f.size_kb for f in gone)}

    @tool(effect="send", open_world=True, id_arg="file_id", idempotent=False)
    async def share_file(
        self,
        file_id: str = Field(description="The file id."),
        contact: str = Field(min_length=1, max_length=80, description="Contact name or nickname."),
    ) -> dict[str, Any]:
        """Send a copy of a file to a contact.

        Args:
            file_id: The file id.
            contact: Contact name or nickname.
        """
        state = self.state
        item = self._item(file_id)
        person = resolve_contact(state, contact)
        share = FileShare(id=issue_id(state.files, "fshare"), file_id=item.id, name=person.name, at=state.now)
        state.files.shares = [*state.files.shares, share]
        return {"id": share.id, "file": item.name, "to": person.name}

    @tool(effect="read", idempotent=True)
    async def get_storage_usage(self) -> dict[str, Any]:
        """Read used and free storage, and how much the trash would free."""
        state = self.state
        used = used_kb(state)
        capacity = state.files.capacity_mb * 1000
        return {"capacity_mb": state.files.capacity_mb, "used_mb": round(used / 1000, 1),
                "free_mb": round((capacity - used) / 1000, 1),
                "trash_mb": round(sum(f.size_kb for f in state.files.items if f.trashed) / 1000, 1)}
