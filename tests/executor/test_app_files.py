"""The files app: folders, files, trash and restore, copies against storage, shares."""

from __future__ import annotations

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

from pocketpilot.executor.sandbox import PhoneState


def _trash(s: PhoneState) -> None:
    s.files.items[1].trashed = True  # file-5, the lease


def _names(s: PhoneState) -> list[str]:
    return [f.name for f in s.files.items]


SUCCESSES = [
    Ok("list_files", {}, lambda d, s: [f["name"] for f in d["folders"]] == ["Documents", "Downloads", "Archive"]
       and d["files"] == []),
    Ok("list_files", {"folder_id": "folder-1"}, lambda d, s: [f["id"] for f in d["files"]] == ["file-4", "file-5", "file-6"]),
    Ok("list_files", {"folder_id": "folder-1"}, lambda d, s: [f["id"] for f in d["files"]] == ["file-4", "file-6"],
       setup=_trash),
    Ok("get_file_info", {"file_id": "file-7"}, lambda d, s: d["folder"] == "Downloads" and d["kind"] == "pdf"),
    Ok("search_files", {"kind": "pdf"}, lambda d, s: [f["id"] for f in d] == ["file-5", "file-7"]),
    Ok("search_files", {"query": "BOARDING"}, lambda d, s: [f["id"] for f in d] == ["file-7"]),
    Ok("create_folder", {"name": "Taxes", "parent_id": "folder-1"},
       lambda d, s: s.files.folders[-1].parent_id == "folder-1" and d["id"] == "folder-12"),
    Ok("rename_file", {"file_id": "file-9", "new_name": "Receipt March.jpg"},
       lambda d, s: s.files.items[5].name == "Receipt March.jpg" and s.files.items[5].modified_at == s.now),
    Ok("move_file", {"file_id": "file-7", "folder_id": "folder-1"}, lambda d, s: s.files.items[3].folder_id == "folder-1"),
    Ok("copy_file", {"file_id": "file-4", "folder_id": "folder-3"},
       lambda d, s: _names(s).count("Q1 report.docx") == 2 and s.files.items[-1].folder_id == "folder-3"),
    Ok("copy_file", {"file_id": "file-4", "folder_id": "folder-1"}, lambda d, s: d["name"] == "Copy of Q1 report.docx"),
    Ok("delete_file", {"file_id": "file-8"}, lambda d, s: s.files.items[4].trashed and len(s.files.items) == 8),
    Ok("list_trash", {}, lambda d, s: [f["id"] for f in d] == ["file-5"], setup=_trash),
    Ok("restore_file", {"file_id": "file-5"}, lambda d, s: not s.files.items[1].trashed, setup=_trash),
    Ok("empty_trash", {}, lambda d, s: d == {"deleted": ["file-5"], "freed_kb": 1830} and len(s.files.items) == 7,
       setup=_trash),
    Ok("share_file", {"file_id": "file-4", "contact": "Priya"},
       lambda d, s: s.files.shares[0].name == "Priya Raman" and s.files.shares[0].file_id == "file-4"),
    Ok("get_storage_usage", {}, lambda d, s: d["capacity_mb"] == 128000 and 11000 < d["used_mb"] < 11300
       and d["trash_mb"] == 1.8, setup=_trash),
]

FAILURES = [
    Fails("list_files", {"folder_id": "folder-9"}, "not_found"),
    Fails("get_file_info", {"file_id": "file-1"}, "not_found"),
    Fails("create_folder", {"name": "documents"}, "conflict"),
    Fails("rename_file", {"file_id": "file-4", "new_name": "budget 2025.XLSX"}, "conflict"),
    Fails("rename_file", {"file_id": "file-5", "new_name": "x.pdf"}, "precondition_failed", message="trash",
          setup=_trash),
    Fails("move_file", {"file_id": "file-4", "folder_id": "folder-7"}, "not_found"),
    Fails("copy_file", {"file_id": "file-11", "folder_id": "folder-1"}, "precondition_failed", message="storage",
          setup=lambda s: setattr(s.files, "capacity_mb", 15_000)),
    Fails("restore_file", {"file_id": "file-4"}, "precondition_failed", message="not in the trash"),
    Fails("share_file", {"file_id": "file-4", "contact": "alice"}, "ambiguous"),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_files_tool_has_a_success() -> None:
    assert_covers("files", SUCCESSES)


async def test_trash_keeps_space_until_emptied() -> None:
    _, ex = fresh()
    used = (await call(ex, "get_storage_usage")).data["used_mb"]
    await call(ex, "delete_file", file_id="file-11")
    assert (await call(ex, "get_storage_usage")).data["used_mb"] == used
    assert (await call(ex, "search_files", query="backup")).data == []
    await call(ex, "empty_trash")
    assert (await call(ex, "get_storage_usage")).data["used_mb"] == round(used - 9800, 1)
    assert (await call(ex, "restore_file", file_id="file-11")).error.code == "not_found"
