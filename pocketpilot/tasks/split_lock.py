"""The frozen test split: its task ids and a hash of each file, recorded in the repo.

Figures on the test split mean something only while the split stays what they were measured
on. ``test_split.lock.json`` records it; a test compares the task files with the record, so a
task added to, removed from or edited in the test split fails CI until the record is
regenerated on purpose (``python -m pocketpilot.tasks.split_lock --write``), in a commit that
says why.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import yaml

__all__ = ["LOCK_FILE", "SplitDrift", "current_test_split", "drift", "lock_main", "recorded_test_split", "write_lock"]

DATA = Path(__file__).parent / "data"
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML has it: a long-history folder holds megabytes of memories."""
LOCK_FILE = Path(__file__).parent / "test_split.lock.json"


class SplitDrift(dict[str, list[str]]):
    """``added``, ``removed`` and ``changed`` task ids (empty lists: no drift)."""

    def __bool__(self) -> bool:
        return any(self.values())


def current_test_split(data: Path = DATA) -> dict[str, str]:
    """Test-split task id → sha256 of its file bytes."""
    out = {}
    for path in sorted(data.glob("*.yaml")):
        raw = path.read_bytes()
        spec = yaml.load(raw, Loader=_YAML_LOADER) or {}
        if spec.get("split") == "test":
            out[str(spec["id"])] = hashlib.sha256(raw).hexdigest()
    return out


def _digest(tasks: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(tasks, sort_keys=True).encode()).hexdigest()


def recorded_test_split(lock: Path = LOCK_FILE) -> dict[str, str]:
    """The split the lock file records; ValueError when its digest does not match its tasks."""
    record = json.loads(lock.read_text())
    tasks = {str(k): str(v) for k, v in record["tasks"].items()}
    if record.get("digest") != _digest(tasks):
        raise ValueError(f"{lock}: its digest does not match its task list (edited by hand?)")
    return tasks


def drift(data: Path = DATA, lock: Path = LOCK_FILE) -> SplitDrift:
    """How the test split's files differ from the record."""
    now, then = current_test_split(data), recorded_test_split(lock)
    return SplitDrift(
        added=sorted(set(now) - set(then)),
        removed=sorted(set(then) - set(now)),
        changed=sorted(t for t in set(now) & set(then) if now[t] != then[t]),
    )


def write_lock(data: Path = DATA, lock: Path = LOCK_FILE) -> dict[str, str]:
    """Record the test split as it is now, with its digest."""
    tasks = current_test_split(data)
    lock.write_text(json.dumps({"count": len(tasks), "digest": _digest(tasks), "tasks": tasks},
                               indent=1, sort_keys=True) + "\n")
    return tasks


def lock_main(argv: list[str] | None, *, what: str, directory: Path, lock: Path,
              regenerate: Callable[[], int] | None = None) -> int:
    """The command line every frozen folder shares: check its test split, or re-record it.

    Exits 1 when the split drifted from its record (each drift printed), 0 otherwise;
    ``regenerate`` (where the folder is generated) rewrites it first with ``--regenerate``.
    """
    parser = argparse.ArgumentParser(description=f"Check (or, with --write, re-record) the frozen test split of {what}.")
    if regenerate is not None:
        parser.add_argument("--regenerate", action="store_true", help=f"rewrite {what} first")
    parser.add_argument("--write", action="store_true", help="record the split as it is now")
    args = parser.parse_args(argv)
    if regenerate is not None and args.regenerate:
        print(f"generated {regenerate()} tasks in {directory}")
    if args.write:
        print(f"recorded {len(write_lock(directory, lock))} test tasks in {lock}")
        return 0
    found = drift(directory, lock)
    for kind, ids in found.items():
        for task_id in ids:
            print(f"{kind}: {task_id}")
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    """Check (or re-record) the hand-written tasks' frozen test split."""
    return lock_main(argv, what="the hand-written tasks", directory=DATA, lock=LOCK_FILE)


if __name__ == "__main__":
    raise SystemExit(main())
