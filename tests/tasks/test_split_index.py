"""The split index: a folder's tasks by split, loaded without opening another split's file."""

from __future__ import annotations

import shutil

import pytest
import yaml

from pocketpilot.errors import TaskSpecError
from pocketpilot.tasks import split_lock
from pocketpilot.tasks.split_index import load_split_tasks, read_split_index, split_index_of
from pocketpilot.tasks.suite import SUITE_DIR, SUITE_LOCK


def test_the_committed_suite_index_matches_its_record() -> None:
    """Cheap (no task file read): the test ids are the locked test split's, the counts the manifest's."""
    index = read_split_index(SUITE_DIR)
    assert set(index["test"]) == set(split_lock.recorded_test_split(SUITE_LOCK))
    counts = yaml.safe_load((SUITE_DIR / "MANIFEST.yml").read_text())["by_group_split"]
    for split in ("dev", "evolve", "test"):
        assert len(index[split]) == sum(n for k, n in counts.items() if k.endswith(f"/{split}"))
    assert len({t for ids in index.values() for t in ids}) == sum(counts.values())
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


@pytest.mark.slow
def test_the_committed_suite_index_matches_its_files() -> None:
    from pocketpilot.tasks.suite import load_generated_suite

    by_split: dict[str, list[str]] = {}
    for task in load_generated_suite():
        by_split.setdefault(task.split, []).append(task.id)
    assert {k: sorted(v) for k, v in by_split.items()} == read_split_index(SUITE_DIR)
