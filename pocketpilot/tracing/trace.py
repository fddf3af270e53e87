"""Episode traces: one JSONL file per episode, written step by step.

A line per record (header, each step, end) appended and flushed as it happens, so a crash or
Ctrl-C keeps every step that completed; a torn last line is ignored on read. Traces convert
losslessly to an OpenAI chat request (system message, ``tools``, messages with ``tool_calls``;
harness actions are calls of declared, reserved ``pp_<kind>`` functions) and back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ValidationError

from ..contracts import (
    ACTION_ADAPTER,
    ACTION_KINDS,
    Action,
    AskUser,
    Delegate,
    Episode,
    EpisodeHeader,
    Finish,
    LoadSkill,
    MemorySearch,
    MemoryWrite,
    Refuse,
    Step,
    StopReason,
    ToolCall,
    ToolCallAction,
    ToolResult,
    ToolSpec,
    Verdict,
    utcnow,
)
from ..errors import TraceError

__all__ = [
    "RESERVED_PREFIX",
    "TRACE_SCHEMA",
    "TraceWriter",
    "actions_from_openai",
    "episode_to_chat",
    "episode_to_openai",
    "episode_tools",
    "read_trace",
]

logger = logging.getLogger(__name__)

TRACE_SCHEMA = 1
RESERVED_PREFIX = "pp_"

_ACTION_MODELS: dict[str, type[BaseModel]] = {
    m.model_fields["kind"].default: m
    for m in (ToolCallAction, MemorySearch, MemoryWrite, LoadSkill, Delegate, AskUser, Refuse, Finish)
}


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
            what = record.get("type", "record") if isinstance(record, dict) else "record"
            raise TraceError(f"{p}:{number}: malformed {what}") from exc
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


def _action_function(kind: str) -> dict[str, Any]:
    """The OpenAI function a harness action kind is declared as (``pp_<kind>``)."""
    model = _ACTION_MODELS[kind]
    schema = model.model_json_schema()
    properties = {k: v for k, v in schema.get("properties", {}).items() if k != "kind"}
    for prop in properties.values():
        prop.pop("title", None)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    required = [k for k in schema.get("required", []) if k != "kind"]
    if required:
        parameters["required"] = required
    if "$defs" in schema:
        parameters["$defs"] = schema["$defs"]
    description = f"pocketpilot harness action {kind}: {schema.get('description', '')}".strip()
    return {"type": "function", "function": {"name": RESERVED_PREFIX + kind, "description": description,
                                             "parameters": parameters}}


def _harness_kinds(episode: Episode) -> list[str]:
    """Kinds offered (recorded in the header) plus any the steps used (older traces)."""
    used = [s.action.kind for s in episode.steps if s.action is not None]
    ordered = [k for k in ACTION_KINDS if k in episode.header.kinds or k in used]
    return [k for k in ordered if k != "tool_call"]


def episode_tools(episode: Episode) -> list[dict[str, Any]]:
    """The OpenAI ``tools`` list of an episode: every tool it exposed, then its harness actions.

    Harness actions (finish, refuse, memory_search, ...) are declared as reserved ``pp_<kind>``
    functions rather than mapped to assistant text: every planner decision then stays a typed
    call a trainer can learn and :func:`actions_from_openai` can read back, and a
    ``finish`` summary cannot be confused with an ``ask_user`` question.
    """
    tools: dict[str, ToolSpec] = {t.name: t for t in episode.header.tools}
    for step in episode.steps:
        for spec in step.tools_added:
            tools.setdefault(spec.name, spec)
    return [t.to_openai() for t in tools.values()] + [_action_function(k) for k in _harness_kinds(episode)]


def _result_body(result: ToolResult) -> dict[str, Any]:
    # the shape the planner was fed (session feedback): defaults left out, ok always there
    return {"ok": result.ok, **result.model_dump(mode="json", exclude_defaults=True)}


def episode_to_openai(episode: Episode) -> list[dict[str, Any]]:
    """Chat messages in the OpenAI format, as the planner saw the run.

    The recorded system message first (and again where a loaded skill changed it), the
    recorded preamble (earlier conversation, recalled evidence), the request, then per step
    the assistant's ``tool_calls`` and one ``tool`` message per call that has a result,
    notices riding on the last. A step with nothing fed back (the final
    finish, ask_user or refuse) ends on its call, with no made-up tool message. An output that
    did not parse stays plain assistant text, followed by its error as a user message (there is
    no call for a tool message to answer).
    """
    messages: list[dict[str, Any]] = []
    prompts = [s.system_prompt for s in episode.steps if s.system_prompt is not None]
    if prompts:
        messages.append({"role": "system", "content": prompts[0]})
    for earlier in episode.header.preamble:
        # an earlier "tool" feedback answers no call of this export: it rides as user text
        role = earlier.get("role") if earlier.get("role") in ("user", "assistant", "system") else "user"
        messages.append({"role": role, "content": earlier.get("content", "")})
    messages.append({"role": "user", "content": episode.header.request})
    shown = prompts[0] if prompts else None
    last = len(episode.steps) - 1
    for n, step in enumerate(episode.steps):
        if step.system_prompt is not None and step.system_prompt != shown:
            messages.append({"role": "system", "content": step.system_prompt})
            shown = step.system_prompt
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
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                    for cid, (name, args) in zip(ids, calls, strict=True)
                ],
            }
        )
        answered = list(zip(ids, step.results, strict=False))
        for i, (cid, result) in enumerate(answered):
            body = _result_body(result)
            if i == len(answered) - 1 and step.notices:
                body["notices"] = step.notices
            content = json.dumps(body, ensure_ascii=False)
            messages.append({"role": "tool", "tool_call_id": cid, "content": content})
        if not answered and step.notices and n < last:
            messages.append({"role": "user", "content": json.dumps({"notices": step.notices}, ensure_ascii=False)})
    return messages


def episode_to_chat(episode: Episode) -> dict[str, Any]:
    """The episode as one OpenAI chat-completions request body: model, messages and tools."""
    return {"model": episode.header.planner.model, "messages": episode_to_openai(episode),
            "tools": episode_tools(episode)}


def actions_from_openai(messages: Iterable[dict[str, Any]]) -> list[Action]:
    """Recover the action sequence from messages made by :func:`episode_to_openai`.

    Raises:
        TraceError: a tool call that is malformed or names a ``pp_`` action that does not exist.
    """
    actions: list[Action] = []
    for number, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        try:
            calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]]
            first = calls[0][0]
            if first.startswith(RESERVED_PREFIX):
                actions.append(ACTION_ADAPTER.validate_python({**calls[0][1], "kind": first[len(RESERVED_PREFIX):]}))
            else:
                actions.append(ToolCallAction(calls=[ToolCall(name=n, arguments=a) for n, a in calls]))
        except (KeyError, TypeError, json.JSONDecodeError, ValidationError) as exc:
            raise TraceError(f"message {number}: not a pocketpilot action ({type(exc).__name__})") from exc
    return actions
