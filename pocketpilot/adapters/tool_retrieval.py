"""Tool exposure by retrieval: each step shows the planner the few tools its request and state need.

A small planner chooses badly among many tools (RAG-MCP: a 3B model collapses above about 32
tools; selection rose from 13.6% to 43.1% when only retrieved tools were shown). On a whole
phone a session holds every app's tools, so the adapter exposes at most ``k`` per step, ranked by
hybrid retrieval over each tool's text against the request and the step's state (the last
step's results):

- **keywords**: BM25 over the tool text's word stems (:func:`tool_text`: name, description, the
  app it belongs to, its declared semantics, argument names, descriptions and allowed values);
- **vectors**: the memory package's embedder (MiniLM), cosine against the same text, fused with
  BM25 by the memory store's convex fusion (:func:`pocketpilot.memory.fusion.fuse`); with no
  embedder, keywords alone.

Tools already used in the run stay exposed, and so do the tools a "more tools" call widened to:
the harness's :data:`MORE_TOOLS` tool, declared read-only, returns the next best tools for the
planner's own words. Widening only changes what is shown: a call of a widened tool meets the same
policies, gates and confirmation as any call.

The index (stems, BM25 statistics, tool vectors) is built once per tool set and cached on the
:class:`ToolRetriever`, so a step costs one query embedding and a dot product.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..contracts import ToolSpec
from ..memory.embedders import Embedder
from ..memory.fusion import FusionWeights, fuse
from .defaults import DEFAULT_STOP_WORDS
from .errors import EtaError

__all__ = [
    "MORE_TOOLS",
    "RetrievedExposure",
    "ToolIndex",
    "ToolRetrievalSettings",
    "ToolRetriever",
    "more_tools_spec",
    "tool_text",
]

logger = logging.getLogger(__name__)

MORE_TOOLS = "more_tools"
"""The harness tool a planner calls when the tool it needs is not shown."""
_STATE_CHARS = 600
"""Characters of the last results the query reads: record fields, not a whole dump."""
_EVIDENCE_CHARS = 1500
"""Characters of the evidence (recalled memories) the query reads."""
_CACHE = 8
"""Tool sets whose index a retriever keeps (a bench alternates few worlds)."""


class ToolRetrievalSettings(BaseModel):
    """η's ``tool_retrieval`` entry: how many tools a step shows, and how they are ranked.

    Absent from η (None), every tool the session holds is shown, as before.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    k: int = Field(default=24, ge=1, le=128)
    """Most tools retrieved for one step (tools already used, or widened to, come on top)."""
    hybrid: bool = True
    """Fuse BM25 with the embedder's cosine (keywords alone without an embedder)."""
    vector_share: float = Field(default=0.5, ge=0.0, le=1.0)
    """The cosine's share of the fused relevance; BM25 gets the rest."""
    state_weight: float = Field(default=0.0, ge=0.0, le=4.0)
    """How much the step's state (the last results) counts beside the request. Off by default: a
    list the state re-ranks changes the system prompt from step to step, so llama.cpp evaluates
    most of the prompt again, and on dev the re-ranking bought no task the stable list (the
    request's best, plus what was used or widened to) missed."""
    clause_vectors: bool = True
    """Embed each clause of a multi-part request too (in the same embedder call as the request);
    off, clauses are matched by keywords only."""
    lookups: bool = True
    """Show, right after a tool that takes a record id (``id_arg``), the read-only tool of its app
    that best matches the id argument's words: the call that finds the record's id."""
    state_vectors: bool = False
    """Embed the state too (one embedder call per step); off, the state is matched by keywords
    only and a step costs no model call (the request side is embedded once per run)."""
    more_tools: bool = True
    """Offer the :data:`MORE_TOOLS` tool, which widens the exposed set."""
    more_k: int = Field(default=6, ge=1, le=64)
    """Tools one :data:`MORE_TOOLS` call adds."""


def more_tools_spec(name: str = MORE_TOOLS) -> ToolSpec:
    """The widening tool: read-only, idempotent, answered by the harness, never by the executor."""
    return ToolSpec(
        name=name,
        description="Show more tools when none of the listed tools fits: say what you need to do; the best "
                    "matching tools are added to the list.",
        parameters={"type": "object", "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 200,
                      "description": "What the tool you need does."}},
            "required": ["query"], "additionalProperties": False},
        read_only=True, idempotent=True, effect="read",
    )


_SPLIT = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_STOP = frozenset(DEFAULT_STOP_WORDS) | {"the", "a", "an", "please", "can", "could", "would", "want", "need", "like"}


def _stem(word: str) -> str:
    """A crude stem, the same on both sides ("sending", "sends", "send" -> "send")."""
    for suffix in ("ing", "ies", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def _terms(text: str) -> list[str]:
    """Stems of the words of ``text`` (snake_case and camelCase split), stop words left out."""
    words = (w.lower() for w in _SPLIT.findall(text))
    return [_stem(w) for w in words if w not in _STOP and (len(w) > 1 or w.isdigit())]


def _arg_values(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> list[str]:
    if "$ref" in schema:
        schema = defs.get(str(schema["$ref"]).rsplit("/", 1)[-1], {})
    values = list(schema.get("enum") or [])
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key) or []:
            values += _arg_values(sub, defs)
    if "items" in schema and isinstance(schema["items"], dict):
        values += _arg_values(schema["items"], defs)
    return [str(v) for v in values if v is not None]


def tool_text(spec: ToolSpec, app: str | None = None) -> str:
    """The text a tool is retrieved by: what it is called, does and takes, in words.

    Only declarations are read (the name, the description, the app the world says it belongs
    to, the declared effect and setting key, the arguments' names, descriptions and allowed
    values): nothing is inferred from the name.
    """
    props = spec.parameters.get("properties") or {}
    defs = spec.parameters.get("$defs") or {}
    parts = [spec.name.replace("_", " ").replace(".", " "), spec.description]
    if app:
        parts.append(app)
    if spec.effect:
        parts.append(spec.effect)
    if spec.setting:
        parts.append(spec.setting.replace("_", " "))
    for arg, schema in props.items():
        parts.append(arg.replace("_", " "))
        if isinstance(schema, dict):
            parts.append(str(schema.get("description") or ""))
            parts += _arg_values(schema, defs)
    for by_value in spec.effect_by_arg.values():
        parts += list(by_value)
    return ". ".join(p for p in parts if p)


@dataclass(frozen=True)
class _Doc:
    counts: Counter[str]
    length: int


class ToolIndex:
    """BM25 statistics and (with an embedder) unit vectors of one tool set; built once, queried per step."""

    K1 = 1.2
    B = 0.75

    def __init__(self, specs: Sequence[ToolSpec], apps: Mapping[str, str] | None = None,
                 embedder: Embedder | None = None) -> None:
        self.names = [s.name for s in specs]
        self.texts = [tool_text(s, (apps or {}).get(s.name)) for s in specs]
        self._docs = [_Doc(Counter(t), len(t)) for t in (_terms(x) for x in self.texts)]
        self._avg = (sum(d.length for d in self._docs) / len(self._docs)) if self._docs else 1.0
        df: Counter[str] = Counter()
        for d in self._docs:
            df.update(d.counts.keys())
        n = len(self._docs)
        self._idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        self.embedder = embedder
        self.vectors = embedder.embed(self.texts) if embedder is not None and self.texts else None
        self.lookup = self._lookups(specs, apps or {})
        """Per tool that takes a record id: the index of the read-only tool that finds such ids."""

    def _lookups(self, specs: Sequence[ToolSpec], apps: Mapping[str, str]) -> dict[int, int]:
        reads = [i for i, s in enumerate(specs) if s.read_only]
        out: dict[int, int] = {}
        for i, spec in enumerate(specs):
            if not spec.id_arg:
                continue
            words = [w for w in _terms(spec.id_arg) if w != "id"]
            scores = self.bm25(words) + 0.1 * self.bm25(_terms(self.texts[i]))
            # a read that itself needs the id finds nothing: the lookup is one that takes none of it
            same = [j for j in reads if j != i and apps.get(specs[j].name) == apps.get(spec.name)
                    and specs[j].id_arg != spec.id_arg]
            best = max(same, key=lambda j: (scores[j], -j), default=None)
            if best is not None and scores[best] > 0:
                out[i] = best
        return out

    def bm25(self, query: Iterable[str]) -> np.ndarray:
        """BM25 score of every tool for the query terms (repeated terms count once)."""
        out = np.zeros(len(self._docs), dtype=np.float64)
        terms = [t for t in dict.fromkeys(query) if t in self._idf]
        for i, d in enumerate(self._docs):
            norm = self.K1 * (1 - self.B + self.B * d.length / self._avg)
            out[i] = sum(self._idf[t] * d.counts[t] * (self.K1 + 1) / (d.counts[t] + norm)
                         for t in terms if t in d.counts)
        return out

    def cosines(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """Cosine of every tool's vector with each text's, in one embedder call (None: no embedder)."""
        if self.vectors is None or self.embedder is None:
            return [None] * len(texts)
        todo = [i for i, t in enumerate(texts) if t.strip()]
        out: list[np.ndarray | None] = [None] * len(texts)
        if todo:
            for i, vec in zip(todo, self.embedder.embed([texts[i] for i in todo]), strict=True):
                out[i] = self.vectors @ vec
        return out


class ToolRetriever:
    """Ranks tools for a request; holds an index per tool set (cached), so sessions share the work.

    Args:
        settings: η's ``tool_retrieval`` entry.
        embedder: the memory package's embedder; None (or ``settings.hybrid`` False): keywords only.
        apps: the app each tool belongs to, by name (η's ``ToolEntry.app``): part of its text.
    """

    def __init__(self, settings: ToolRetrievalSettings, embedder: Embedder | None = None,
                 apps: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self.embedder = embedder if settings.hybrid else None
        self.apps = dict(apps or {})
        self._indexes: OrderedDict[str, ToolIndex] = OrderedDict()

    @property
    def mode(self) -> str:
        """``hybrid`` or ``keyword`` (no embedder): what the trace and the bench report."""
        return "hybrid" if self.embedder is not None else "keyword"

    def index(self, specs: Sequence[ToolSpec]) -> ToolIndex:
        """The index of ``specs``, built on first use and kept (keyed by the tools' content)."""
        key = hashlib.sha256(json.dumps(
            [[s.model_dump(mode="json"), self.apps.get(s.name)] for s in specs], sort_keys=True,
            default=str).encode()).hexdigest()
        found = self._indexes.get(key)
        if found is None:
            found = ToolIndex(specs, self.apps, self.embedder)
            self._indexes[key] = found
            while len(self._indexes) > _CACHE:
                self._indexes.popitem(last=False)
        else:
            self._indexes.move_to_end(key)
        return found

    def scores(self, index: ToolIndex, text: str, cos: np.ndarray | None = None, *, vectors: bool = True) -> np.ndarray:
        """Fused relevance of every tool of ``index`` to ``text``, in [0, 1] (higher is better).

        ``cos``: the tools' cosines with ``text`` when the caller embedded it already (None: embed
        it here, unless ``vectors`` is False: keywords alone).
        """
        kw = index.bm25(_terms(text))
        if not vectors:
            cos = None
        elif cos is None:
            cos = index.cosines([text])[0]
        keyword = [(i, float(s)) for i, s in enumerate(kw) if s > 0]
        keyword.sort(key=lambda p: -p[1])
        vector = [] if cos is None else sorted(((i, float(c)) for i, c in enumerate(cos)), key=lambda p: -p[1])
        weights = FusionWeights(rrf=1.0, recency=0.0, importance=0.0, method="convex",
                                vector_share=self.settings.vector_share)
        out = np.zeros(len(index.names))
        if not keyword and not vector:
            return out
        meta = {i: (0.0, 0.0) for i in range(len(index.names))}
        for c in fuse(keyword, vector, meta, 0.0, weights):
            out[c.rid] = c.rrf
        return out

    def rank(self, specs: Sequence[ToolSpec], request: str, state: str = "") -> list[str]:
        """Every tool of ``specs`` by relevance to ``request`` and ``state``, best first."""
        return RetrievedExposure(self, list(specs), request).ranked(state)

    def exposure(self, specs: Sequence[ToolSpec], request: str, evidence: Sequence[str] = ()) -> RetrievedExposure:
        """A run's exposure over ``specs`` (what the harness asks each step).

        ``evidence``: what the run shows with the request (recalled memories): a request such
        as "the usual way" names its tools only there.

        Raises:
            EtaError: the world has a tool named like the harness's widening tool.
        """
        if self.settings.more_tools and any(s.name == MORE_TOOLS for s in specs):
            raise EtaError("tool_retrieval", f"the world has a tool named {MORE_TOOLS!r}, the harness's own")
        return RetrievedExposure(self, list(specs), request, evidence)

    def start(self, specs: Sequence[ToolSpec], request: str, evidence: Sequence[str] = ()) -> RetrievedExposure:
        """The harness's ``ToolExposure.start``: :meth:`exposure` for one run."""
        return self.exposure(specs, request, evidence)


def _clauses(request: str) -> list[str]:
    """The request's clauses, split at punctuation only (no words): each part of a multi-part
    request gets its own best tools, so the larger part cannot crowd out the smaller.
    """
    parts = [p.strip() for p in _CLAUSE.split(request)]
    return [p for p in parts if _terms(p)]


_CLAUSE = re.compile(r"[.;:!?](?:\s+|$)|,\s+|\n+")


class RetrievedExposure:
    """One run's tool exposure: at most ``k`` retrieved tools per step, plus the pinned ones.

    The request's side of the ranking (the whole request and each of its clauses) is scored
    once, when the run starts; a step scores only its state. It satisfies the harness's
    ``ToolExposure`` protocol (:mod:`pocketpilot.harness.base`) by shape: the adapter never
    imports the harness.
    """

    def __init__(self, retriever: ToolRetriever, specs: list[ToolSpec], request: str,
                 evidence: Sequence[str] = ()) -> None:
        self._retriever = retriever
        self._specs = specs
        self._index = retriever.index(specs)
        self._order = {s.name: i for i, s in enumerate(specs)}
        self.request = request
        self.more_tools = more_tools_spec() if retriever.settings.more_tools else None
        """The widening tool the harness answers itself (None: not offered)."""
        clauses = _clauses(request)
        clauses = clauses if len(clauses) > 1 else []
        told = "\n".join(e for e in evidence if e.strip())[:_EVIDENCE_CHARS]
        parts = [*clauses, *([told] if told else [])]
        embedded = [request, *(parts if retriever.settings.clause_vectors else parts[len(clauses):])]
        cos = self._index.cosines(embedded)  # one embedder call for the whole request side
        vecs = cos[1:] if retriever.settings.clause_vectors else [None] * len(clauses) + cos[1:]
        self._whole = retriever.scores(self._index, request, cos[0])
        self._parts = [retriever.scores(self._index, c, v, vectors=v is not None or c not in clauses)
                       for c, v in zip(parts, vecs, strict=True)]

    def ranked(self, state: str = "") -> list[str]:
        """Every tool, best first: the request with ``state``, then each clause's best in turn.

        Round robin over the lists (the whole request and state first, then each clause), so
        every clause of a multi-part request has its best tools near the top.
        """
        weight = self._retriever.settings.state_weight
        main = self._whole
        state = state[:_STATE_CHARS]
        if state.strip() and weight > 0:
            main = main + weight * self._retriever.scores(self._index, state,
                                                          vectors=self._retriever.settings.state_vectors)
        lists = [np.argsort(-main, kind="stable"), *(np.argsort(-p, kind="stable") for p in self._parts)]
        out: dict[int, None] = {}
        lookups = self._index.lookup if self._retriever.settings.lookups else {}
        for row in zip(*lists, strict=True):
            for i in row:
                out.setdefault(int(i), None)
                if int(i) in lookups:
                    out.setdefault(lookups[int(i)], None)
        return [self._index.names[i] for i in out]

    def expose(self, state: str, pinned: Iterable[str]) -> list[str]:
        """The tools to show now: the best ``k`` for the request and ``state``, and ``pinned`` (used, widened).

        Names keep the session's tool order, so a step whose set did not change shows the same
        prefix as the step before.
        """
        chosen = set(self.ranked(state)[: self._retriever.settings.k]) | {p for p in pinned if p in self._order}
        return sorted(chosen, key=self._order.__getitem__)

    def widen(self, query: str, shown: Iterable[str]) -> list[str]:
        """The next best tools for the planner's ``query`` that are not shown yet (at most ``more_k``)."""
        seen = set(shown)
        scores = self._retriever.scores(self._index, query)
        ranked = [self._index.names[int(i)] for i in np.argsort(-scores, kind="stable")]
        return [n for n in ranked if n not in seen][: self._retriever.settings.more_k]
