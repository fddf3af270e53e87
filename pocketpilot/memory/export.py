"""Export a user's memories, and keep deleted memories out of later trace exports.

Every trace exporter (``export sft``, ``export rl``, releases) passes its episodes through
:func:`guard_episode` with the memory stores' deletion ledger: retrieved copies of deleted
memories are scrubbed by id (:func:`scrub_episode`), and an episode that still quotes a
deleted memory anywhere else (the planner repeated it in a message, a tool argument or its
summary) is left out whole, since its turns cannot be cut without teaching something else.
Then :func:`redact_row` takes secrets out of the rows written.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..contracts import Episode, MemorySearch, Step, ToolResult
from .access import Caller
from .ledger import DeletionLedger
from .redaction import redact_secrets
from .store import SqliteMemory

__all__ = ["export_jsonl", "guard_episode", "redact_row", "scrub_episode"]

_ROW_IDS = frozenset({"id", "episode_id", "group_id", "task_id", "tool_call_id", "model_sha256", "eta_version",
                      "hash", "store_hash", "context_digest"})
"""Row fields that hold identifiers, never user text: redaction leaves them as they are."""


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

    header = episode.header
    if any(m.id in deleted for m in header.recalled):  # recalled before the first step, recorded in the header
        header = header.model_copy(update={"recalled": [m for m in header.recalled if m.id not in deleted]})
    return episode.model_copy(update={"header": header, "steps": [scrub_step(s) for s in episode.steps]})


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def guard_episode(episode: Episode, ledger: DeletionLedger) -> Episode | None:
    """``episode`` fit for export under ``ledger``, or None if it must be left out.

    Retrieved memories with a deleted id are scrubbed (:func:`scrub_episode`); then, if any
    text of the episode still quotes a memory deleted after the episode started, the whole
    episode is dropped. An episode that started after the deletion is kept: the text it
    holds came back as new evidence, such as the user saying it again.
    """
    if not ledger:
        return episode
    scrubbed = scrub_episode(episode, ledger.ids)
    started = episode.header.started_at.timestamp()
    if ledger.quotes_any(_strings(scrubbed.model_dump(mode="json")), made_at=started):
        return None
    return scrubbed


def redact_row(row: dict[str, Any]) -> dict[str, Any]:
    """An export row with secrets redacted from every text field (ids left alone).

    A planner turn whose ``raw`` text held a secret also loses its ``token_ids`` and
    ``token_logprobs``: the tokens spell the secret as surely as the text does.
    """

    def walk(value: Any, key: str | None) -> Any:
        if isinstance(value, str):
            return value if key in _ROW_IDS else redact_secrets(value)
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if isinstance(value, dict):
            out = {k: walk(v, k) for k, v in value.items()}
            if isinstance(value.get("raw"), str) and out.get("raw") != value["raw"]:
                for field_name in ("token_ids", "token_logprobs"):
                    if field_name in out:
                        out[field_name] = []
            return out
        return value

    return walk(row, None)  # type: ignore[no-any-return]
