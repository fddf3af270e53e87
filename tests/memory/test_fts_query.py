from __future__ import annotations

import pytest

from pocketpilot.memory.fts import build_match_query, query_terms
from pocketpilot.memory.models import MemoryCandidate, Provenance

HOSTILE = [
    "my sister's birthday",
    "foo: bar",
    '"',
    "AND OR NOT",
    "x AND",
    "(",
    "*",
    "NEAR(a b)",
    "col:val^2 -x +y",
    "🎂 birthday 🎉",
    "'; DROP TABLE items; --",
    "\x00birthday",
    "a" * 100_000,
    "birthday " * 20_000,
]


def test_terms_are_quoted_words():
    assert build_match_query("my sister's birthday") == '"sister" OR "birthday"'
    assert build_match_query("AND OR NOT") == '"not"'  # and/or are stopwords, quoted literals anyway
    assert build_match_query("and or") == '"and" OR "or"'  # only stopwords: keep them
    assert build_match_query('"') is None
    assert build_match_query("") is None
    assert len(query_terms("w" + " w".join(str(i) for i in range(1000)))) == 32


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_break_search(kw_store, svc, query):
    kw_store.write(svc, MemoryCandidate(content="My sister's birthday is March 3",
                                        provenance=Provenance(source="user_statement")))
    hits = kw_store.search(svc, query, k=5)
    assert isinstance(hits, list)
    if "birthday" in query:
        assert hits and "birthday" in hits[0].item.content
    # nothing was lost
    assert len(kw_store.list_items(svc)) == 1
