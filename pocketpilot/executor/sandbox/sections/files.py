"""The files app: folders and files on the phone's storage, a trash, shares."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import Field

from ._base import Section

__all__ = ["FileItem", "FileKind", "FileShare", "FilesState", "FolderItem", "default_files"]

FileKind = Literal["document", "pdf", "spreadsheet", "image", "audio", "video", "archive"]


class FolderItem(Section):
    """A folder; ``parent_id`` None is the storage root."""

    id: str
    name: str
    parent_id: str | None = None


class FileItem(Section):
    """A file; trashed files keep their folder so a restore puts them back."""

    id: str
    name: str
    kind: FileKind
    folder_id: str
    size_kb: Annotated[int, Field(ge=0)]
    modified_at: datetime
    trashed: bool = False


class FileShare(Section):
    """A file sent to a contact (``name`` is the contact)."""

    id: str
    file_id: str
    name: str
    at: datetime


class FilesState(Section):
    """Storage: folders, files and what was shared."""

    capacity_mb: Annotated[int, Field(gt=0)] = 128_000
    folders: list[FolderItem] = Field(default_factory=list)
    items: list[FileItem] = Field(default_factory=list)
    shares: list[FileShare] = Field(default_factory=list)
    next_id: int = 1


_FILES = [
    ("Q1 report.docx", "document", "folder-1", 420, 2),
    ("Lease agreement.pdf", "pdf", "folder-1", 1_830, 60),
    ("Budget 2025.xlsx", "spreadsheet", "folder-1", 96, 10),
    ("Boarding pass LH204.pdf", "pdf", "folder-2", 210, 0),
    ("Podcast episode 12.mp3", "audio", "folder-2", 48_200, 5),
    ("Scan_0311.jpg", "image", "folder-2", 2_400, 3),
    ("Holiday video.mp4", "video", "folder-3", 1_250_000, 200),
    ("Old photos backup.zip", "archive", "folder-3", 9_800_000, 400),
]


def default_files(now: datetime) -> FilesState:
    """Documents, Downloads and Archive folders with eight files; nearly 9% of storage used."""
    return FilesState(
        folders=[
            FolderItem(id="folder-1", name="Documents"),
            FolderItem(id="folder-2", name="Downloads"),
            FolderItem(id="folder-3", name="Archive"),
        ],
        items=[
            FileItem(id=f"file-{i}", name=n, kind=k, folder_id=f, size_kb=s, modified_at=now - timedelta(days=d))  # type: ignore[arg-type]
            for i, (n, k, f, s, d) in enumerate(_FILES, start=4)
        ],
        next_id=12,
    )
