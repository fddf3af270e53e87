"""Per-request routing: which skills' procedures a request needs up front, and which memory actions.

The traces of the 1.5B planner show why a harness routes rather than waits: given a
``load_skill`` action and a skill index, a small planner almost never loads the skill, so the
procedure (the unit factors, the note-then-power-off order) never reaches it; given
``memory_write`` it spends its few steps writing memories nobody asked for. The router decides
from the request alone, before the first step, with no model call:

- **skills**: the available skills (required tools exposed) ranked by how many of their terms
  the request uses (declared ``keywords``, description and skill-name words, never tool
  names), the best few kept. Their procedures go into the first context; the planner needs no ``load_skill`` step.
- **memory_write**: offered only when the request asks to remember something (episodes are
  captured at the end of every run anyway). The pattern is η data (``Eta.offers``), English
  by default: an app in another language revises η, not this code.
- **delegate**: offered only when the request asks for a helper or sub-agent (``Eta.offers`` too):
  a small planner handed plain one-app requests to a sub-agent as an escape after any surprise,
  and a child it started so can undo what the parent just did. The user's words decide.

Matching is lexical on purpose: microseconds per request, deterministic, and explainable in a
trace (``SkillRouter.explain``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..contracts import ToolSpec
from ..skills import SkillLibrary
from ..skills.worlds import ToolSet
from .notes import DEFAULT_OFFERS, DEFAULT_STOP_WORDS

__all__ = ["SkillRouter", "asks_to_delegate", "asks_to_remember"]

_STOP = frozenset(DEFAULT_STOP_WORDS)
"""The default (η's ``stop_words`` when a router is built from η)."""
_MIN_SCORE = 2.0
"""One declared keyword, or two description/tool words: below that a match is noise."""


def asks_to_remember(request: str, pattern: str | None = None) -> bool:
    """Whether the request asks the agent to remember something (η's ``offers["memory_write"]``)."""
    return bool(re.search(pattern or DEFAULT_OFFERS["memory_write"], request, re.IGNORECASE))


def asks_to_delegate(request: str, pattern: str | None = None) -> bool:
    """Whether the request asks for a helper or sub-agent (η's ``offers["delegate"]``)."""
    return bool(re.search(pattern or DEFAULT_OFFERS["delegate"], request, re.IGNORECASE))


def _normalize(text: str) -> str:
    """Lowercase, hyphens and underscores as spaces, other punctuation dropped, single spaces."""
    text = re.sub(r"[-_/]", " ", text.lower())
    text = re.sub(r"[^a-z0-9' ]+", " ", text)
    return " " + " ".join(text.split()) + " "


def _words(text: str, stop: frozenset[str]) -> set[str]:
    return {w for w in _normalize(text).split() if len(w) > 2 and w not in stop}


def _request_stems(request: str, stop: frozenset[str]) -> set[str]:
    """Stems of every non-stop token of a request (short ones too: "km", "oz")."""
    return {_stem(w) for w in _normalize(request).split() if len(w) > 1 and w not in stop}


def _stem(word: str) -> str:
    """A crude stem, the same on both sides: "noting", "notes", "note" -> "not"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


@dataclass(frozen=True)
class _Terms:
    phrases: tuple[str, ...]
    """Normalized multi-word keywords (matched as whole phrases, weight 2)."""
    keys: frozenset[str]
    """Stems of one-word keywords (weight 2: "messaged" matches "message")."""
    stems: frozenset[str]
    """Stems of description and tool-name words (weight 1 each)."""
    generic: bool
    """The skill requires no tool (e.g. the conflict arbiter): it must match twice as strongly."""


class SkillRouter:
    """Ranks a library's skills for a request; built once, asked per request.

    Args:
        library: the skills.
        max_skills: at most this many procedures go into one context.
        min_score: the least score that counts as a match (see :data:`_MIN_SCORE`).
        stop_words: words ignored on both sides (η's ``stop_words``; English by default).
    """

    def __init__(self, library: SkillLibrary, *, max_skills: int = 2, min_score: float = _MIN_SCORE,
                 stop_words: Iterable[str] | None = None) -> None:
        self.library = library
        self.max_skills = max_skills
        self.min_score = min_score
        self._stop = frozenset(w.lower() for w in stop_words) if stop_words is not None else _STOP
        self._terms: dict[str, _Terms] = {}
        for skill in library.skills():
            meta = skill.meta
            keywords = {_normalize(k).strip() for k in meta.keywords} - {""}
            phrases = tuple(sorted(k for k in keywords if " " in k))
            keys = frozenset(_stem(k) for k in keywords if " " not in k)
            words = _words(meta.description, self._stop) | _words(meta.name, self._stop)
            stems = frozenset(_stem(w) for w in words) - keys
            self._terms[skill.name] = _Terms(phrases, keys, stems, generic=not meta.requires)

    def explain(self, request: str) -> dict[str, list[str]]:
        """Per skill, the terms of ``request`` that matched it (for traces and tests)."""
        text = _normalize(request)
        stems = _request_stems(request, self._stop)
        out: dict[str, list[str]] = {}
        for name, terms in self._terms.items():
            hits = [p for p in terms.phrases if re.search(rf" {re.escape(p)}(s|es)? ", text)]
            hits += sorted(stems & terms.keys) + sorted(stems & terms.stems)
            if hits:
                out[name] = hits
        return out

    def scores(self, request: str) -> dict[str, float]:
        """Relevance of each skill to ``request`` (0 for no match)."""
        text = _normalize(request)
        stems = _request_stems(request, self._stop)
        out: dict[str, float] = {}
        for name, terms in self._terms.items():
            phrase_hits = sum(1 for p in terms.phrases if re.search(rf" {re.escape(p)}(s|es)? ", text))
            out[name] = 2.0 * (phrase_hits + len(stems & terms.keys)) + len(stems & terms.stems)
        return out

    def route(self, request: str, exposed_tools: Sequence[str | ToolSpec] | Iterable[str | ToolSpec] | ToolSet) -> list[str]:
        """The skills whose procedures ``request`` needs, best first.

        Only skills available with ``exposed_tools`` (every required tool exposed, as a tool of
        the skill's world: a namesake from another world makes no skill available) compete;
        those scoring at least ``min_score`` are kept, at most ``max_skills`` of them. A skill
        that requires no tool is available everywhere, so it needs twice the score: the
        arbiter belongs to requests that combine two interfering things, not to every request
        that names one. Ties keep the library's (alphabetical) order, so routing is deterministic.
        """
        available = self.library.available(exposed_tools if isinstance(exposed_tools, ToolSet) else list(exposed_tools))
        scores = self.scores(request)

        def enough(name: str) -> bool:
            need = self.min_score * (2 if self._terms[name].generic else 1)
            return scores.get(name, 0.0) >= need

        ranked = sorted((n for n in available if enough(n)), key=lambda n: -scores[n])
        return ranked[: self.max_skills]
