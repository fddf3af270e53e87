"""Export a user's memories, and keep deleted memories out of later trace exports."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..contracts import Episode, MemorySearch, Step, ToolResult
from .access import Caller
from .store import SqliteMemory

__all__ = ["export_jsonl", "scrub_episode"]


def export_jsonl(store: SqliteMemory, caller: Caller, path: str | Path) -> int:
    """Write the caller's memories as JSON lines to ``path`` atomically; returns the count."""
    records = store.export(caller)
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for record in records:
                fh.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(records)


def scrub_episode(episode: Episode, deleted_ids: Iterable[str]) -> Episode:
    """Return ``episode`` with every retrieved memory whose id was deleted removed (children too).

    Trace exporters call this with :meth:`SqliteMemory.deleted_ids`, so a memory a user
    deleted never reappears in exported training data.
    """
    deleted = set(deleted_ids)
    if not deleted:
        return episode

    def scrub_result(result: ToolResult) -> ToolResult:
        # The planner saw the hits as a memory_search result too; exports are built from it.
        data = result.data
        if not (isinstance(data, dict) and isinstance(data.get("memories"), list)):
            return result
        kept = [m for m in data["memories"] if not (isinstance(m, dict) and m.get("id") in deleted)]
        return result.model_copy(update={"data": {**data, "memories": kept}})

    def scrub_step(step: Step) -> Step:
        results = step.results
        if isinstance(step.action, MemorySearch):
            results = [scrub_result(r) for r in step.results]
        return step.model_copy(
            update={
                "retrieved": [m for m in step.retrieved if m.id not in deleted],
                "results": results,
                "children": [scrub_episode(child, deleted) for child in step.children],
            }
        )

    return episode.model_copy(update={"steps": [scrub_step(s) for s in episode.steps]})
