"""The action journal: every device action under an idempotency key, so none is sent twice.

An action is written as ``pending`` before it is sent and ``done`` (with its result) after.
If the device drops in between, the entry becomes ``uncertain``: nobody knows whether the
phone acted. A non-idempotent action (send a message, tap a toggle) in that state is never
sent again; a caller repeating the same key gets the recorded result or an ``outcome_unknown``
failure instead. With a path, the journal is also appended to a JSON-lines file so it
survives the process.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ...contracts import ToolResult

__all__ = ["ActionJournal", "JournalEntry"]

logger = logging.getLogger(__name__)

EntryState = Literal["pending", "done", "uncertain", "failed"]


class JournalEntry(BaseModel):
    """One action and what is known about its outcome."""

    model_config = ConfigDict(frozen=True)

    key: str
    serial: str
    tool: str
    arguments: dict[str, Any]
    idempotent: bool
    state: EntryState
    attempts: int = 1
    result: ToolResult | None = None
    at: float = 0.0


class ActionJournal:
    """Idempotency keys -> entries; thread-safe; optionally persisted as JSON lines."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._entries: dict[str, JournalEntry] = {}
        self._lock = threading.Lock()
        self._path = Path(path) if path is not None else None
        if self._path is not None and self._path.exists():
            for line in self._path.read_text().splitlines():
                if line.strip():
                    entry = JournalEntry.model_validate_json(line)
                    if entry.state == "pending":  # the process died mid-send
                        entry = entry.model_copy(update={"state": "uncertain"})
                    self._entries[entry.key] = entry

    def get(self, key: str) -> JournalEntry | None:
        """The entry for a key, if any."""
        with self._lock:
            return self._entries.get(key)

    def entries(self, serial: str | None = None) -> list[JournalEntry]:
        """All entries in insertion order (of one device, if given)."""
        with self._lock:
            return [e for e in self._entries.values() if serial is None or e.serial == serial]

    def uncertain_twin(
        self, serial: str, tool: str, arguments: dict[str, Any], *, since: float
    ) -> JournalEntry | None:
        """The latest uncertain non-idempotent entry of the same call on ``serial`` since ``since``.

        A planner told ``outcome_unknown`` often sends the very same call again under a new
        key; if the first one did reach the phone, that is the double send the journal exists
        to prevent.
        """
        with self._lock:
            twins = [
                e
                for e in self._entries.values()
                if e.serial == serial and e.tool == tool and e.arguments == arguments
                and e.state == "uncertain" and not e.idempotent and e.at >= since
            ]
        return twins[-1] if twins else None

    def _put(self, entry: JournalEntry) -> JournalEntry:
        with self._lock:
            self._entries[entry.key] = entry
            if self._path is not None:
                with self._path.open("a") as fh:
                    fh.write(entry.model_dump_json() + "\n")
        logger.debug("journal %s %s %s", entry.key, entry.tool, entry.state)
        return entry

    def begin(
        self, key: str, serial: str, tool: str, arguments: dict[str, Any], idempotent: bool
    ) -> JournalEntry:
        """Record that the action is about to be sent."""
        previous = self.get(key)
        attempts = previous.attempts + 1 if previous else 1
        return self._put(
            JournalEntry(
                key=key,
                serial=serial,
                tool=tool,
                arguments=arguments,
                idempotent=idempotent,
                state="pending",
                attempts=attempts,
                at=time.time(),
            )
        )

    def finish(self, key: str, result: ToolResult) -> JournalEntry:
        """Record the action's result (ok or a tool failure: either way the phone answered)."""
        entry = self.get(key)
        assert entry is not None, key
        return self._put(entry.model_copy(update={"state": "done", "result": result}))

    def mark_uncertain(self, key: str) -> JournalEntry:
        """The connection dropped after sending: the action may or may not have happened."""
        entry = self.get(key)
        assert entry is not None, key
        return self._put(entry.model_copy(update={"state": "uncertain"}))

    def mark_failed(self, key: str) -> JournalEntry:
        """The action certainly did not reach the device (it failed before sending)."""
        entry = self.get(key)
        assert entry is not None, key
        return self._put(entry.model_copy(update={"state": "failed"}))

    @staticmethod
    def dumps(entries: list[JournalEntry]) -> str:
        """Entries as JSON (for traces and debugging)."""
        return json.dumps([e.model_dump(mode="json") for e in entries])
