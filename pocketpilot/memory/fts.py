"""Safe FTS5 queries from raw user text.

FTS5's query language treats ``'``, ``"``, ``:``, ``*``, ``(``, ``AND``/``OR``/``NOT`` and
``NEAR`` as syntax, so text such as ``my sister's birthday`` or ``foo: bar`` is a syntax
error (FACTS.md). We never pass user text through: it is split into word tokens, each is
quoted as a string literal, and the literals are OR-ed, so BM25 ranks by how many and how
rare the matched terms are.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["MAX_QUERY_TERMS", "build_match_query", "query_terms"]

MAX_QUERY_TERMS = 32
"""More terms add latency without improving a top-k (BM25 saturates)."""
MAX_QUERY_CHARS = 2000

_WORD = re.compile(r"\w+", re.UNICODE)
_STOPWORDS = frozenset(
    "a an and are as at be but by do for from has have i in is it its me my of on or our so that the "
    "their them they this to was we were what when where which who will with you your".split()
)


def query_terms(text: str) -> list[str]:
    """Lower-cased word tokens of ``text``; stopwords and stray letters dropped unless nothing else is left.

    Only the first ``MAX_QUERY_CHARS`` characters are read (a 100 KB paste is not a query),
    and duplicates are dropped keeping first-seen order.
    """
    words = [w.lower() for w in _WORD.findall(text[:MAX_QUERY_CHARS])]
    words = [w.replace("_", " ").strip() or w for w in words]
    seen: dict[str, None] = {}
    for word in words:
        seen.setdefault(word, None)
    unique = list(seen)
    content = [w for w in unique if w not in _STOPWORDS and (len(w) > 1 or w.isdigit())]
    return (content or unique)[:MAX_QUERY_TERMS]


def build_match_query(text: str, operator: Literal["OR", "AND"] = "OR") -> str | None:
    """An FTS5 MATCH expression that cannot be a syntax error, or None if ``text`` has no words.

    Each term becomes a string literal (``"term"``; embedded quotes doubled, although the
    tokenizer above leaves none), joined with ``OR`` (any term; the ranking query) or ``AND``
    (every term; the store's fast path for queries whose terms are all common).
    """
    if operator not in ("OR", "AND"):
        raise ValueError(f"operator must be OR or AND, not {operator!r}")
    terms = query_terms(text)
    if not terms:
        return None
    return f" {operator} ".join('"' + term.replace('"', '""') + '"' for term in terms)
