"""The split index: a folder's tasks by split, loaded without opening another split's file."""

from __future__ import annotations

import shutil

import pytest
import yaml

from pocketpilot.errors import TaskSpecError
from pocketpilot.tasks.split_index import load_split_tasks, read_split_index, split_index_of
from pocketpilot.tasks.suite import SUITE_DIR, load_generated_suite


def test_the_committed_suite_index_matches_its_files() -> None:
    index = read_split_index(SUITE_DIR)
    by_split: dict[str, list[str]] = {}
    for task in load_generated_suite():
        by_split.setdefault(task.split, []).append(task.id)
    assert {k: sorted(v) for k, v in by_split.items()} == {k: v for k, v in index.items() if v}
    assert split_index_of([{"id": "b", "split": "dev"}, {"id": "a", "split": "dev"}]) == \
        {"dev": ["a", "b"], "evolve": [], "test": []}


def test_only_the_asked_splits_load_and_a_stale_index_is_refused(tmp_path) -> None:
    folder = tmp_path / "suite"
    folder.mkdir()
    index = read_split_index(SUITE_DIR)
    chosen = index["dev"][:3] + index["evolve"][:2] + index["test"][:2]
    for task_id in chosen:
        shutil.copy(SUITE_DIR / f"{task_id}.yaml", folder)
    small = {"dev": index["dev"][:3], "evolve": index["evolve"][:2], "test": index["test"][:2]}
    (folder / "MANIFEST.yml").write_text(yaml.safe_dump({"splits": small}))
    for task_id in small["test"]:
        (folder / f"{task_id}.yaml").write_text("{not: [a task")  # unreadable: loading it would fail
    loaded = load_split_tasks(folder, ["dev", "evolve"])
    assert [t.id for t in loaded["dev"]] == small["dev"] and [t.id for t in loaded["evolve"]] == small["evolve"]
    swapped = {**small, "dev": small["evolve"], "evolve": small["dev"]}
    (folder / "MANIFEST.yml").write_text(yaml.safe_dump({"splits": swapped}))
    with pytest.raises(TaskSpecError, match="split index says"):
        load_split_tasks(folder, ["dev"])
    (folder / "MANIFEST.yml").write_text(yaml.safe_dump({"splits": {**small, "dev": ["no-such-task"]}}))
    with pytest.raises(TaskSpecError, match="no no-such-task.yaml"):
        load_split_tasks(folder, ["dev"])
    (folder / "MANIFEST.yml").unlink()
    with pytest.raises(TaskSpecError, match="split index"):
        load_split_tasks(folder, ["dev"])
