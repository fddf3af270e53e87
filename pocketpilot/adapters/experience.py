"""The experience library: workflows distilled from verified runs, kept in η, shown as worked examples.

A verified successful run is the best evidence of how a request of its kind gets done
(Agent Workflow Memory, SEER and FC-ICL measured what reusing such runs does for small
models). The trainer bridge distils runs into :class:`ExperienceEntry` records
(:func:`pocketpilot.trainer_bridge.distil.distil`); this module holds the records, merges
near-duplicates, retrieves a few per request and renders them under a token budget.

Values are slots. Every argument value that came from the request, from an earlier result or
from a recalled memory is replaced by a named slot (``<contact>``); the example shows the
slot, never the value, so the planner fills it from the current request and results. What is
left as a literal is a value the tool's schema declares (an enum member, a const) or a boolean;
a value the run worked out itself is a slot too. An entry whose request reads as holding
personal data is not ``shareable``: it is shown only to the owner it was learned from.

Entries are η data (``Eta.experience``): versioned with η, shown by ``adapter diff``, added
and evicted by reviewed revisions, and dropped by :func:`forget` when a memory they drew on is
deleted (the deletion ledger's ids and quotes, as exports use it).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..memory.fts import query_terms
from ..memory.fusion import FusionWeights, fuse, mmr

__all__ = [
    "ExperienceConfig",
    "ExperienceEntry",
    "Recovery",
    "SlotInfo",
    "StepCase",
    "WorkflowCall",
    "call_text",
    "entry_id",
    "entry_texts",
    "experience_digest",
    "forget",
    "merge",
    "render_examples",
    "render_step_hint",
    "render_entry",
    "retrieve",
    "shape_of",
    "step_cases_for",
    "usable_for",
]

SLOT_KEY = "$slot"
"""An argument value ``{"$slot": "contact"}`` is the slot ``<contact>``, not a literal."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SlotInfo(_Model):
    """Where a slot's value came from in the run it was learned from (never the value itself).

    Attributes:
        name: the slot's name (``contact``, ``id``; unique within the entry).
        source: ``request`` (a value the user's words held), ``result`` (an earlier call's
            result), ``memory`` (what was shown with the request: recalled memories, the
            device clock, earlier conversation), ``derived`` (the run worked it out: a time
            from "7:30 pm", a message it composed).
        call: for ``result``: the index, in ``calls``, of the call whose result held it.
        path: for ``result``: the field path in that result's data (``items.0.id``).
    """

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")
    source: Literal["request", "result", "memory", "derived"]
    call: int | None = None
    path: str | None = None


class WorkflowCall(_Model):
    """One call of a workflow, its values lifted into slots.

    Attributes:
        tool: the tool's name.
        arguments: the arguments; a value ``{"$slot": name}`` is a slot.
        check: the tool declares it reads only (a check the run made before a change).
    """

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    check: bool = False


class Recovery(_Model):
    """How the run got past an error: the failed call's tool and code, then the call that worked."""

    tool: str
    code: str
    then: WorkflowCall


class StepCase(_Model):
    """The step-level form: a situation (the last call and how it ended) and the action that worked next.

    Attributes:
        tool: the last call's tool.
        code: its error code; ``ok`` when it succeeded.
        action: the calls of the step that followed it (slotted like the workflow).
    """

    tool: str
    code: str
    action: list[WorkflowCall] = Field(min_length=1)


class ExperienceEntry(_Model):
    """A workflow distilled from one or more verified successful episodes.

    Attributes:
        id: stable identifier (``exp-`` + a digest of the workflow's shape).
        request: the request with its values lifted into ``<slots>``.
        variants: further slotted requests of merged near-duplicates (retrieval reads them).
        calls: the successful calls in order.
        slots: where each slot's value came from.
        recoveries: the errors the runs recovered from, and how.
        steps: the step-level cases (situation → action that worked).
        provenance: the episode ids it came from.
        memory_ids: ids of memories the source runs were shown (deletion reaches the entry).
        owner: the owner whose deployment runs it came from (None: dev/evolve bench runs).
        shareable: no owner data is left after slotting; usable for another owner.
        made_at: when the earliest of its runs was distilled (epoch seconds): a deletion after
            it reaches the entry's text.
        tools: the tools it calls (shown only while every one is exposed).
    """

    id: str = Field(pattern=r"^exp-[a-z0-9]{4,32}$")
    request: str = Field(min_length=1, max_length=1000)
    variants: list[str] = Field(default_factory=list)
    calls: list[WorkflowCall] = Field(min_length=1)
    slots: list[SlotInfo] = Field(default_factory=list)
    recoveries: list[Recovery] = Field(default_factory=list)
    steps: list[StepCase] = Field(default_factory=list)
    provenance: list[str] = Field(min_length=1)
    memory_ids: list[str] = Field(default_factory=list)
    owner: str | None = None
    shareable: bool = True
    made_at: float = 0.0

    @property
    def tools(self) -> list[str]:
        """The tools the workflow calls, in first-call order."""
        return list(dict.fromkeys(c.tool for c in self.calls))

    def shape(self) -> str:
        """What makes two entries near-duplicates: the same tools, argument names and slot pattern."""
        return shape_of(self.calls)


class ExperienceConfig(_Model):
    """How η shows its experience: the switch, how many entries, and the budget.

    Attributes:
        enabled: False turns worked examples and step hints off (the entries stay in η).
        k: entries shown per request at most.
        budget_tokens: prompt tokens the examples may take (estimated as characters / 3.5
            when no counter is given).
        steps: show the step-level hint after a failed call that a case matches.
    """

    enabled: bool = True
    k: int = Field(default=2, ge=1, le=8)
    budget_tokens: int = Field(default=800, ge=50, le=4000)
    steps: bool = True


# --------------------------------------------------------------------------- shape, merge


def _skeleton(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {SLOT_KEY}:
            return "<slot>"
        return {k: _skeleton(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_skeleton(v) for v in value]
    return value if isinstance(value, bool) or value is None else type(value).__name__


def shape_of(calls: Sequence[WorkflowCall]) -> str:
    """Canonical shape of a call sequence: tools, argument names, where slots stand (values aside)."""
    return json.dumps([[c.tool, _skeleton(c.arguments)] for c in calls], sort_keys=True)


def entry_id(calls: Sequence[WorkflowCall]) -> str:
    """The id an entry of this shape gets."""
    return "exp-" + hashlib.sha256(shape_of(calls).encode()).hexdigest()[:12]


def merge(entries: Sequence[ExperienceEntry], new: Iterable[ExperienceEntry]) -> list[ExperienceEntry]:
    """``entries`` with ``new`` merged in: near-duplicates (same shape and owner) become one entry.

    The merged entry keeps the first one's workflow, unions provenance and memory ids, keeps
    up to three request variants, the earliest ``made_at``, and is shareable only if both were.
    Order: existing entries first, then new shapes in the order given.
    """
    out: dict[tuple[str, str | None], ExperienceEntry] = {}
    for e in [*entries, *new]:
        key = (e.shape(), e.owner)
        have = out.get(key)
        if have is None:
            out[key] = e
            continue
        variants = list(dict.fromkeys([*have.variants, *([e.request] if e.request != have.request else []),
                                       *e.variants]))
        variants = [v for v in variants if v != have.request][:3]
        out[key] = have.model_copy(update={
            "provenance": sorted(set(have.provenance) | set(e.provenance)),
            "memory_ids": sorted(set(have.memory_ids) | set(e.memory_ids)),
            "variants": variants,
            "recoveries": list({r.model_dump_json(): r for r in [*have.recoveries, *e.recoveries]}.values()),
            "steps": list({s.model_dump_json(): s for s in [*have.steps, *e.steps]}.values())[:12],
            "shareable": have.shareable and e.shareable,
            "made_at": min(have.made_at, e.made_at) if have.made_at and e.made_at else (have.made_at or e.made_at),
        })
    return list(out.values())


def usable_for(entry: ExperienceEntry, owner: str | None) -> bool:
    """Whether ``entry`` may be shown in a run for ``owner``.

    Bench entries (no owner) are for everyone; an owner's entries are the owner's, and another
    owner's only when no owner data is left in them after slotting.
    """
    return entry.owner is None or entry.owner == owner or entry.shareable


def experience_digest(entries: Sequence[ExperienceEntry]) -> str:
    """16 hex digits of the sha256 of the entries' canonical JSON (what a trace records)."""
    text = json.dumps([e.model_dump(mode="json") for e in entries], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- deletion


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k != SLOT_KEY:
                yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def entry_texts(entry: ExperienceEntry) -> list[str]:
    """Every text an entry holds (requests, literal argument values): what deletion checks."""
    texts = [entry.request, *entry.variants]
    calls = [*entry.calls, *(r.then for r in entry.recoveries), *(c for s in entry.steps for c in s.action)]
    for c in calls:
        texts.extend(_strings(c.arguments))
    return texts


def forget(entries: Sequence[ExperienceEntry], ledger: Any) -> tuple[list[ExperienceEntry], list[str]]:
    """Drop every entry a deleted memory survives in; returns (kept, ids dropped).

    ``ledger`` is a :class:`pocketpilot.memory.ledger.DeletionLedger`: an entry goes when a
    source run was shown a deleted memory (its id), or when its text quotes one deleted after
    the entry was made (the ledger's keyed word windows, as exports check).
    """
    if not ledger:
        return list(entries), []
    kept: list[ExperienceEntry] = []
    dropped: list[str] = []
    for e in entries:
        if set(e.memory_ids) & set(ledger.ids) or ledger.quotes_any(entry_texts(e), made_at=e.made_at or None):
            dropped.append(e.id)
        else:
            kept.append(e)
    return kept, dropped


# --------------------------------------------------------------------------- retrieval


def _bm25(query: list[str], docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> list[float]:
    n = len(docs)
    avg = sum(len(d) for d in docs) / n if n else 0.0
    df: dict[str, int] = {}
    for d in docs:
        for t in set(d):
            df[t] = df.get(t, 0) + 1
    scores = []
    for d in docs:
        tf: dict[str, int] = {}
        for t in d:
            tf[t] = tf.get(t, 0) + 1
        s = 0.0
        for t in query:
            if t in tf:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(d) / (avg or 1.0)))
        scores.append(s)
    return scores


_SLOT_TEXT = re.compile(r"<[A-Za-z_][A-Za-z0-9_]*>")


def _doc(entry: ExperienceEntry) -> str:
    """The text retrieval reads: the slotted requests and the tools (slot names left out)."""
    return _SLOT_TEXT.sub(" ", " ".join([entry.request, *entry.variants])) + " " + " ".join(entry.tools)


def retrieve(
    entries: Sequence[ExperienceEntry],
    request: str,
    *,
    tools: Iterable[str] | None = None,
    owner: str | None = None,
    k: int = 2,
    embedder: Any | None = None,
    weights: FusionWeights | None = None,
    min_relative: float = 0.5,
) -> list[ExperienceEntry]:
    """Pick up to ``k`` entries for ``request``: hybrid BM25 + cosine when an embedder is given, BM25 alone otherwise.

    Only entries usable for ``owner`` whose tools are all in ``tools`` (when given) compete;
    an entry that shares no word with the request and has no cosine above the fusion's floor
    is never shown (a worked example of another kind of request only misleads). The fused
    list goes through MMR, so two entries of the same shape are not both shown; an entry whose
    fused relevance is under ``min_relative`` of the best one's is left out (a weak second
    example costs prompt tokens and may mislead).
    """
    have = set(tools) if tools is not None else None
    pool = [e for e in entries if usable_for(e, owner) and (have is None or set(e.tools) <= have)]
    if not pool or not request.strip():
        return []
    weights = weights or FusionWeights()
    docs = [query_terms(_doc(e)) for e in pool]
    scores = _bm25(query_terms(request), docs)
    keyword = sorted(((i, s) for i, s in enumerate(scores) if s > 0), key=lambda p: -p[1])
    vector: list[tuple[int, float]] = []
    vecs: dict[int, np.ndarray] = {}
    if embedder is not None:
        mat = embedder.embed([request, *(_doc(e) for e in pool)])
        cos = mat[1:] @ mat[0]
        vecs = {i: mat[i + 1] for i in range(len(pool))}
        vector = sorted(((i, float(c)) for i, c in enumerate(cos) if c >= weights.min_cosine), key=lambda p: -p[1])
    if not keyword and not vector:
        return []
    meta = {i: (0.0, 0.5) for i in range(len(pool))}
    ranked = fuse(keyword, vector, meta, 0.0, FusionWeights(
        rrf=1.0, recency=0.0, importance=0.0, method=weights.method, vector_share=weights.vector_share,
        min_cosine=weights.min_cosine, mmr_lambda=weights.mmr_lambda))
    ranked = [c for c in ranked if c.rrf >= min_relative * ranked[0].rrf] if ranked else []
    picked = mmr(ranked, k, weights.mmr_lambda, vectors=vecs, texts={i: _doc(pool[i]) for i in range(len(pool))})
    return [pool[c.rid] for c, _ in picked]


def step_cases_for(entries: Sequence[ExperienceEntry], tool: str, code: str) -> list[StepCase]:
    """The step cases whose situation is ``tool`` ending with ``code``, most supported first."""
    found: dict[str, tuple[StepCase, int]] = {}
    for e in entries:
        for case in e.steps:
            if case.tool == tool and case.code == code:
                key = case.model_dump_json()
                have = found.get(key)
                found[key] = (case, (have[1] if have else 0) + len(e.provenance))
    return [c for c, _ in sorted(found.values(), key=lambda p: -p[1])]


# --------------------------------------------------------------------------- display


def _value_text(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {SLOT_KEY}:
        return f"<{value[SLOT_KEY]}>"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def call_text(call: WorkflowCall) -> str:
    """``tool(arg=<slot>, other="on")``: slots as slots, literals as JSON."""
    return f"{call.tool}(" + ", ".join(f"{k}={_value_text(v)}" for k, v in call.arguments.items()) + ")"


def _slot_refs(value: Any) -> Iterable[str]:
    if isinstance(value, dict) and set(value) == {SLOT_KEY}:
        yield str(value[SLOT_KEY])
    elif isinstance(value, dict):
        for v in value.values():
            yield from _slot_refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _slot_refs(v)


def _slot_note(entry: ExperienceEntry) -> str:
    used = {name for c in entry.calls for name in _slot_refs(c.arguments)}
    parts = []
    for s in (s for s in entry.slots if s.name in used):
        if s.source == "result" and s.call is not None:
            parts.append(f"<{s.name}> from the result of call {s.call + 1}" + (f" ({s.path})" if s.path else ""))
        elif s.source == "memory":
            parts.append(f"<{s.name}> from what was shown with the request")
        elif s.source == "derived":
            parts.append(f"<{s.name}> worked out from the request")
    return "; ".join(parts)


def render_entry(entry: ExperienceEntry, number: int) -> str:
    """One worked example: the slotted request, the numbered calls, where result slots come from, recoveries."""
    lines = [f"Example {number}: {entry.request}"]
    for i, c in enumerate(entry.calls, start=1):
        lines.append(f"  {i}. {'check ' if c.check else ''}{call_text(c)}")
    note = _slot_note(entry)
    if note:
        lines.append(f"  ({note})")
    for r in entry.recoveries[:2]:
        lines.append(f"  after {r.code} from {r.tool}: {call_text(r.then)}")
    return "\n".join(lines)


HEADER = ("Worked examples (requests like this one that were done before; each <slot> stands for a value: "
          "take it from the current request or results, never from an example):")


def _estimate(text: str) -> int:
    return math.ceil(len(text) / 3.5)


def render_examples(
    entries: Sequence[ExperienceEntry],
    *,
    budget_tokens: int = 800,
    count_tokens: Callable[[str], int] | None = None,
) -> str:
    """The worked-examples section for ``entries`` (best first), whole examples only, within the budget.

    Returns the empty string when not even one example fits.
    """
    count = count_tokens or _estimate
    kept: list[str] = []
    for e in entries:
        block = render_entry(e, len(kept) + 1)
        text = "\n".join([HEADER, *kept, block])
        if count(text) > budget_tokens:
            continue
        kept.append(block)
    return "\n".join([HEADER, *kept]) if kept else ""


def render_step_hint(case: StepCase) -> str:
    """The step-level hint for a matched case (slots as slots)."""
    then = "; ".join(call_text(c) for c in case.action)
    return f"An earlier successful run got past {case.code} from {case.tool} with: {then} (fill the <slots> from this run)."


def now() -> float:
    """Epoch seconds (a seam for tests)."""
    return time.time()
