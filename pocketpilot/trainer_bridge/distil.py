"""Distil verified successful episodes into experience entries (workflows with slots) for η.

Only a run that passed its verifier, or that its user explicitly approved, is a source: a run
that merely stopped with ``finish`` may have claimed a success it did not reach. From each
source this keeps the successful calls in order, with every argument value lifted into a
named slot when it came from the request, an earlier result or a recalled memory; the reads
it made before a change (declared ``read_only``/``effect: read`` on the tool's spec, never
guessed from its name); how it got past each error; and the step-level cases (the last call
and how it ended → the calls that worked next). Near-duplicates then merge
(:func:`pocketpilot.adapters.experience.merge`).

Secrets are redacted as the trace exports redact them (:func:`pocketpilot.memory.redaction.redact_secrets`).
Only the values a tool's schema declares (an enum member, a const) and booleans stay literal;
every other value is a slot, the ones the run worked out itself (a time from "7:30 pm") too,
so an example never carries a value of the run it came from. A value a memory supplied is
thus a slot: deleting the memory leaves nothing of it in the entry but the entry's link to the
memory's id (``memory_ids``), which :func:`pocketpilot.adapters.experience.forget` reads. An
entry from an owner's deployment run is ``shareable`` only when its request template holds no
personal detail the memory redactor or the curation's PII check finds.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..adapters.experience import (
    SLOT_KEY,
    ExperienceEntry,
    Recovery,
    SlotInfo,
    StepCase,
    WorkflowCall,
    entry_id,
    forget,
    merge,
    now,
)
from ..contracts import Episode, ToolCallAction, ToolResult, ToolSpec
from ..errors import UsageError
from ..memory.redaction import Redactor, redact_secrets
from ..tracing.trace import read_trace
from .curation_pii import find_pii

__all__ = ["distil", "distil_episode", "is_verified"]

logger = logging.getLogger(__name__)

Source = Episode | str | os.PathLike[str]
_NAME = re.compile(r"[^A-Za-z0-9_]+")
MAX_STEP_CASES = 12


def is_verified(episode: Episode, approved: Iterable[str] = ()) -> bool:
    """A passing verdict, or the user's explicit approval of the episode (its id in ``approved``)."""
    return bool(episode.verdict is not None and episode.verdict.success) or episode.header.episode_id in set(approved)


def _load(source: Source) -> Episode:
    if isinstance(source, Episode):
        return source
    try:
        episode, _complete = read_trace(source)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{source}: not a readable trace: {exc}") from exc
    return episode


def _leaves(value: Any, path: str = "") -> Iterable[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}.{i}" if path else str(i))
    else:
        yield path, value


def _allowed(spec: ToolSpec | None, arg: str) -> list[Any]:
    """Values the tool's schema declares for ``arg`` (an enum, a const)."""
    if spec is None:
        return []
    schema = spec.parameters.get("properties", {}).get(arg, {})
    defs = spec.parameters.get("$defs", {})
    if "$ref" in schema:
        schema = defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {})
    values = list(schema.get("enum", []))
    if "const" in schema:
        values.append(schema["const"])
    for alt in schema.get("anyOf", []):
        values.extend(alt.get("enum", []))
    return values


def _forms(value: Any) -> list[str]:
    """How ``value`` may be written in text: a float that is whole also as an integer (``5.0``, ``5``)."""
    if isinstance(value, float) and value.is_integer():
        return [str(value), str(int(value))]
    return [str(value)]


def _pattern(text: str) -> re.Pattern[str]:
    """``text`` as a whole word or phrase (a value "on" is not the "on" inside "convert")."""
    return re.compile(rf"(?<![\w.]){re.escape(text)}(?![\w])", re.IGNORECASE)


def _in_text(value: Any, text: str) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return any(_pattern(f).search(text) for f in _forms(value))
    return isinstance(value, str) and len(value.strip()) >= 2 and _pattern(value.strip()).search(text) is not None


class _Lifter:
    """Lifts one episode's argument values into slots, sharing a slot per value."""

    def __init__(self, request: str, memories: Sequence[str], specs: Mapping[str, ToolSpec]) -> None:
        self.request, self.memories, self.specs = request, memories, specs
        self.by_value: dict[str, str] = {}
        self.slots: list[SlotInfo] = []
        self.results: list[Any] = []
        """Data of the workflow's calls so far (a later value may come from one)."""
        self.request_values: dict[str, Any] = {}

    def _new(self, arg: str, **info: Any) -> str:
        base = _NAME.sub("_", arg).strip("_")[:32] or "value"
        if base[0].isdigit():
            base = "v_" + base
        names = {s.name for s in self.slots}
        name, n = base, 2
        while name in names:
            name, n = f"{base}_{n}", n + 1
        self.slots.append(SlotInfo(name=name, **info))
        return name

    def _lift(self, tool: str, arg: str, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self._lift(tool, k, v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._lift(tool, arg, v) for v in value]
        if isinstance(value, bool) or value is None or value in _allowed(self.specs.get(tool), arg):
            return value
        key = repr(value)
        if key in self.by_value:
            return {SLOT_KEY: self.by_value[key]}
        name: str | None = None
        if _in_text(value, self.request):
            name = self._new(arg, source="request")
            self.request_values[name] = value
        else:
            for i, data in enumerate(self.results):
                path = next((p for p, v in _leaves(data) if v == value and not isinstance(v, bool)), None)
                if path is not None:
                    name = self._new(arg, source="result", call=i, path=path or None)
                    break
        if name is None and any(_in_text(value, m) for m in self.memories):
            name = self._new(arg, source="memory")
        if name is None:  # the run worked it out (a time from "7:30 pm"): still a slot, never the value
            name = self._new(arg, source="derived")
        self.by_value[key] = name
        return {SLOT_KEY: name}

    def call(self, tool: str, arguments: dict[str, Any]) -> WorkflowCall:
        spec = self.specs.get(tool)
        check = bool(spec is not None and (spec.read_only or spec.effect == "read"))
        return WorkflowCall(tool=tool, arguments={k: self._lift(tool, k, v) for k, v in arguments.items()},
                            check=check)

    def template(self) -> str:
        text = self.request
        for name, value in sorted(self.request_values.items(), key=lambda kv: -len(str(kv[1]))):
            for form in _forms(value) if not isinstance(value, str) else [value.strip()]:
                text = _pattern(form).sub(f"<{name}>", text)
        return redact_secrets(text)


def _memories(episode: Episode) -> tuple[list[str], list[str]]:
    """(texts, ids) of what the run was shown from memory: the preamble's evidence and retrieved items."""
    texts = [m.get("content", "") for m in episode.header.preamble]
    ids: list[str] = []
    for step in episode.steps:
        for mem in step.retrieved:
            texts.append(mem.content)
            ids.append(mem.id)
    return texts, sorted(set(ids))


def _code(result: ToolResult | None) -> str:
    if result is None:
        return "no_result"
    return "ok" if result.ok else (result.error.code if result.error else "error")


def distil_episode(episode: Episode, *, owner: str | None = None, at: float | None = None) -> ExperienceEntry | None:
    """One entry from one verified episode (None: it made no successful tool call)."""
    specs = {t.name: t for t in episode.header.tools}
    for step in episode.steps:
        specs.update((t.name, t) for t in step.tools_added)
    texts, memory_ids = _memories(episode)
    lifter = _Lifter(episode.header.request, texts, specs)
    calls: list[WorkflowCall] = []
    recoveries: list[Recovery] = []
    pending: dict[str, str] = {}  # tool -> code of its latest failure not yet got past
    lifted: dict[tuple[int, int], WorkflowCall] = {}  # (step, call) -> the workflow's form of it
    seen: dict[int, int] = {}
    for index, call, result in episode.tool_calls():
        position = seen[index] = seen.get(index, -1) + 1
        if result is None:
            continue
        if not result.ok:
            pending[call.name] = _code(result)
            continue
        done = lifted[(index, position)] = lifter.call(call.name, call.arguments)
        calls.append(done)
        lifter.results.append(result.data)
        if call.name in pending:
            recoveries.append(Recovery(tool=call.name, code=pending.pop(call.name), then=done))
    if not calls:
        return None
    steps: list[StepCase] = []
    tool_steps = [s for s in episode.steps if isinstance(s.action, ToolCallAction) and s.results]
    for before, after in zip(tool_steps, tool_steps[1:], strict=False):
        assert isinstance(before.action, ToolCallAction) and isinstance(after.action, ToolCallAction)
        if not all(r.ok for r in after.results):
            continue
        last_call, last_result = before.action.calls[-1], before.results[-1]
        # the workflow's forms: lifting again would read results that came later
        action = [lifted[(after.index, i)] for i in range(len(after.action.calls)) if (after.index, i) in lifted]
        if not action:
            continue
        steps.append(StepCase(tool=last_call.name, code=_code(last_result), action=action))
    template = lifter.template()
    personal = Redactor().redact(template).changed or bool(find_pii(template))
    return ExperienceEntry(
        id=entry_id(calls),
        request=template[:1000],
        calls=calls,
        slots=lifter.slots,
        recoveries=recoveries,
        steps=steps[:MAX_STEP_CASES],
        provenance=[episode.header.episode_id],
        memory_ids=memory_ids,
        owner=owner,
        shareable=owner is None or not personal,
        made_at=at if at is not None else now(),
    )


def distil(
    sources: Iterable[Source],
    *,
    approved: Iterable[str] = (),
    owner: str | None = None,
    owners: Mapping[str, str] | None = None,
    ledger: Any | None = None,
    at: float | None = None,
) -> list[ExperienceEntry]:
    """Experience entries from the verified successful episodes among ``sources`` (episodes or trace paths).

    Args:
        sources: episodes, or paths of trace files.
        approved: episode ids the user explicitly approved (a source without a passing verdict
            counts only if listed).
        owner: the owner of every source's deployment runs (None: bench runs on dev/evolve).
        owners: episode id → owner, where sources come from several owners (over ``owner``).
        ledger: a :class:`pocketpilot.memory.ledger.DeletionLedger`: nothing quoting a deleted
            memory, or drawn from a run shown one, is kept.
        at: the distilling time recorded as ``made_at`` (default: now).

    Returns:
        Entries, near-duplicates merged, in first-seen order. Sources that did not pass are
        skipped (logged), as are passing runs without a successful tool call.

    Raises:
        UsageError: a path is not a readable trace.
    """
    ok = set(approved)
    entries: list[ExperienceEntry] = []
    for source in sources:
        episode = _load(source)
        if not is_verified(episode, ok):
            logger.debug("distil: %s not verified, skipped", episode.header.episode_id)
            continue
        who = (owners or {}).get(episode.header.episode_id, owner)
        entry = distil_episode(episode, owner=who, at=at)
        if entry is not None:
            entries.append(entry)
    merged = merge([], entries)
    if ledger:
        merged, dropped = forget(merged, ledger)
        if dropped:
            logger.info("distil: %d entries dropped for deleted memories", len(dropped))
    return merged


def read_sources(folder: str | os.PathLike[str]) -> list[Path]:
    """Trace files (``*.jsonl``) under ``folder``, sorted (a bench's trace folder)."""
    return sorted(Path(folder).rglob("*.jsonl"))
