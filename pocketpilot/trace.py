"""Episode traces: one JSONL file per episode, written step by step.

A line per record (header, each step, end) appended and flushed as it happens, so a crash or
Ctrl-C keeps every step that completed; a torn last line is ignored on read. Traces convert
losslessly to OpenAI chat messages with ``tool_calls`` (non-tool actions ride as calls of
reserved ``pp_<kind>`` functions) and back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from .contracts import (
    ACTION_ADAPTER,
    Action,
    Episode,
    EpisodeHeader,
    Step,
    StopReason,
    ToolCall,
    ToolCallAction,
    Verdict,
    utcnow,
)
from .errors import TraceError

__all__ = [
    "RESERVED_PREFIX",
    "TRACE_SCHEMA",
    "TraceWriter",
    "actions_from_openai",
    "episode_to_openai",
    "read_trace",
]

logger = logging.getLogger(__name__)

TRACE_SCHEMA = 1
RESERVED_PREFIX = "pp_"


class TraceWriter:
    """Appends one episode's records to a JSONL file; every write is flushed and fsynced."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fh: IO[str] | None = None
        self._lock = asyncio.Lock()
        self._pending: asyncio.Future[None] | None = None

    def _open(self) -> IO[str]:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("x", encoding="utf-8")
        return self._fh

    def _write_sync(self, record: dict[str, Any]) -> None:
        fh = self._open()
        fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())

    async def _write(self, record: dict[str, Any]) -> None:
        async with self._lock:
            # A write whose caller was cancelled (Ctrl-C) keeps running in its thread, and the
            # lock is released as the cancellation unwinds: the next record (the "cancelled"
            # end) waits for that line first, so records stay whole and in order.
            if self._pending is not None and not self._pending.done():
                await asyncio.shield(self._pending)
            self._pending = asyncio.ensure_future(asyncio.to_thread(self._write_sync, record))
            # A cancelled writer thread must finish its line before we give up, or the file tears.
            await asyncio.shield(self._pending)

    async def header(self, header: EpisodeHeader) -> None:
        """First line: every version and hash of the run."""
        await self._write({"type": "header", "schema": TRACE_SCHEMA, "header": header.model_dump(mode="json")})

    async def step(self, step: Step) -> None:
        """One completed step."""
        await self._write({"type": "step", "step": step.model_dump(mode="json")})

    async def end(self, episode: Episode) -> None:
        """Last line: why the run stopped, and the verdict."""
        await self._write(
            {
                "type": "end",
                "stop_reason": episode.stop_reason,
                "stop_detail": episode.stop_detail,
                "verdict": episode.verdict.model_dump(mode="json") if episode.verdict else None,
                "ended_at": (episode.ended_at or utcnow()).isoformat(),
            }
        )

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def read_trace(path: str | os.PathLike[str]) -> tuple[Episode, bool]:
    """Load an episode from its trace; returns (episode, complete).

    ``complete`` is False when the run never wrote its end record (crash, kill) or the last
    line was torn; the steps that completed are still returned.
    """
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TraceError(f"{p}: cannot read trace: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise TraceError(f"{p}: not a text trace file") from exc
    header: EpisodeHeader | None = None
    steps: list[Step] = []
    end: dict[str, Any] | None = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):  # torn final write: keep what is whole
                logger.warning("%s: ignoring torn last line", p)
                break
            raise TraceError(f"{p}:{number}: invalid JSON") from exc
        try:
            kind = record.get("type")
            if kind == "header":
                if record.get("schema", 0) > TRACE_SCHEMA:
                    raise TraceError(f"{p}: trace schema {record['schema']} is newer than this pocketpilot")
                header = EpisodeHeader.model_validate(record["header"])
            elif kind == "step":
                steps.append(Step.model_validate(record["step"]))
            elif kind == "end":
                end = record
            else:
                raise TraceError(f"{p}:{number}: unknown record type {kind!r}")
        except (ValidationError, KeyError, AttributeError) as exc:
            raise TraceError(f"{p}:{number}: malformed {record.get('type', 'record') if isinstance(record, dict) else 'record'}") from exc
    if header is None:
        raise TraceError(f"{p}: no header record (not a pocketpilot trace)")
    stop: StopReason | None = end.get("stop_reason") if end else None
    verdict = Verdict.model_validate(end["verdict"]) if end and end.get("verdict") else None
    episode = Episode(
        header=header,
        steps=steps,
        stop_reason=stop,
        stop_detail=end.get("stop_detail", "") if end else "",
        verdict=verdict,
        ended_at=end.get("ended_at") if end else None,
    )
    return episode, end is not None


def _action_call(action: Action) -> tuple[str, dict[str, Any]]:
    fields = action.model_dump(mode="json", exclude={"kind"})
    return RESERVED_PREFIX + action.kind, fields


def episode_to_openai(episode: Episode) -> list[dict[str, Any]]:
    """Chat messages in the OpenAI format: the request, then per step the assistant's tool_calls
    and one ``tool`` message per call; unparseable outputs stay as plain assistant text."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": episode.header.request}]
    for step in episode.steps:
        action = step.action
        if action is None:
            raw = step.planner.raw if step.planner else ""
            messages.append({"role": "assistant", "content": raw})
            err = step.error.model_dump() if step.error else {}
            messages.append({"role": "user", "content": json.dumps({"error": err, "notices": step.notices})})
            continue
        if isinstance(action, ToolCallAction):
            calls = [(c.name, c.arguments) for c in action.calls]
        else:
            calls = [_action_call(action)]
        ids = [f"call_{step.index}_{i}" for i in range(len(calls))]
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                    for cid, (n, a) in zip(ids, calls)
                ],
            }
        )
        for i, cid in enumerate(ids):
            if i < len(step.results):
                body: dict[str, Any] = step.results[i].model_dump(mode="json")
            else:
                body = {}
            if i == len(ids) - 1 and step.notices:
                body["notices"] = step.notices
            messages.append({"role": "tool", "tool_call_id": cid, "content": json.dumps(body)})
    return messages


def actions_from_openai(messages: Iterable[dict[str, Any]]) -> list[Action]:
    """Recover the action sequence from messages made by :func:`episode_to_openai`."""
    actions: list[Action] = []
    for message in messages:
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]]
        first = calls[0][0]
        if first.startswith(RESERVED_PREFIX):
            actions.append(ACTION_ADAPTER.validate_python({"kind": first[len(RESERVED_PREFIX):], **calls[0][1]}))
        else:
            actions.append(ToolCallAction(calls=[ToolCall(name=n, arguments=a) for n, a in calls]))
    return actions
