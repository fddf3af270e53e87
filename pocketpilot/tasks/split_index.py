"""Which task of a folder is in which split, known without opening a task file.

A task's split is written inside its own file, so a loader that reads every file to find the
dev split has already read the test split. The co-evolution loop (``pocketpilot evolve``)
tunes η on dev and evolve and must never read a test task, not even to learn that it is one.
The generator therefore records the split of every task it writes in the folder's
``MANIFEST.yml`` (``splits: {dev: [ids], evolve: [ids], test: [ids]}``, files named
``<id>.yaml``), and :func:`load_split_tasks` opens only the files of the splits asked for.

A task whose file says another split than the index is refused: the index and the files no
longer describe the same folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import yaml

from ..errors import TaskSpecError
from .loader import check_splits, load_task
from .spec import TaskSpec

__all__ = ["MANIFEST", "SPLITS_KEY", "load_split_tasks", "read_split_index", "split_index_of"]

MANIFEST = "MANIFEST.yml"
SPLITS_KEY = "splits"
_SPLITS = ("dev", "evolve", "test")


def split_index_of(tasks: Iterable[dict[str, object]]) -> dict[str, list[str]]:
    """The index written into a manifest: split → sorted ids of the task dicts (the order the files list in)."""
    index: dict[str, list[str]] = {s: [] for s in _SPLITS}
    for task in tasks:
        index.setdefault(str(task["split"]), []).append(str(task["id"]))
    return {split: sorted(ids) for split, ids in index.items()}


def read_split_index(folder: str | Path) -> dict[str, list[str]]:
    """The folder's split index from its ``MANIFEST.yml``.

    Raises:
        TaskSpecError: no manifest, or one without a readable ``splits`` index.
    """
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise TaskSpecError(str(folder), f"no {MANIFEST} with a split index: make the folder with "
                                         "`pocketpilot tasks generate`, which records each task's split")
    try:
        manifest = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise TaskSpecError(str(path), f"not a readable manifest: {' '.join(str(exc).split())[:200]}") from exc
    index = manifest.get(SPLITS_KEY) if isinstance(manifest, dict) else None
    if not isinstance(index, dict) or not all(isinstance(v, list) for v in index.values()):
        raise TaskSpecError(str(path), f"no split index ('{SPLITS_KEY}': split -> task ids): regenerate the folder "
                                       "with `pocketpilot tasks generate`")
    return {str(k): [str(i) for i in v] for k, v in index.items()}


def load_split_tasks(folder: str | Path, splits: Sequence[str]) -> dict[str, list[TaskSpec]]:
    """Load only the tasks of ``splits`` from ``folder``, by its index; no other task file is opened.

    Raises:
        TaskSpecError: no index, a listed file missing or invalid, or a file whose split
            differs from the index.
    """
    base = Path(folder)
    index = read_split_index(base)
    out: dict[str, list[TaskSpec]] = {}
    for split in splits:
        tasks = []
        for task_id in index.get(split, []):
            path = next((p for p in (base / f"{task_id}.yaml", base / f"{task_id}.json") if p.is_file()), None)
            if path is None:
                raise TaskSpecError(str(base), f"the split index lists {task_id!r}, but no {task_id}.yaml is there")
            task = load_task(path, roots=(base, base.resolve().parent))
            if task.split != split or task.id != task_id:
                raise TaskSpecError(str(path), f"the split index says {task_id} ({split}), the file says "
                                               f"{task.id} ({task.split}): regenerate the index")
            tasks.append(task)
        out[split] = tasks
    check_splits(t for ts in out.values() for t in ts)
    return out
