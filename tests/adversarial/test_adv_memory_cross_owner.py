"""Cross-owner retrieval through FTS5 query syntax, filters and every retrieval mode.

tests/memory/test_hybrid_hostile.py shows hostile text never breaks a search, and
tests/memory/test_access.py that plain and semantic queries stay inside the owner. Here the
query itself tries to escape: FTS5 operators (OR, NEAR, *, ^, column filters, quotes,
parentheses), SQL fragments, the shared owner's name, filters that name another owner's
category, and a foreign owner who holds 30 near-copies of each fact so any unfiltered
index scan would be full of them.
"""

from __future__ import annotations

import itertools

import pytest
from _adv_memory_support import POLICY, admin, embedder, svc

from pocketpilot.memory import MemoryCandidate, Provenance, SearchFilters, SqliteMemory

FACTS = [
    ("My bank PIN is 4921", "My bank PIN is 8810"),
    ("My sister Maria's birthday is March 3", "My sister Maria's birthday is March 4"),
    ("Locker combination zebra-41", "Locker combination quokka-77"),
]
FOREIGN_MARK = "bobonly"
ESCAPES = [
    "8810", "quokka", FOREIGN_MARK, "8810 OR 4921", "* OR quokka", "quokka*", "quok*", "^quokka", "^8810",
    "content:quokka", "category:bob", "items_fts:quokka", "{content category}:quokka", "- quokka", "NOT 4921",
    'NEAR(PIN 8810, 2)', "NEAR(quokka combination)", '"quokka" OR "8810"', '"quokka', "quokka)", "(quokka OR (8810",
    "PIN AND 8810 AND NOT alice", "' OR owner = 'bob' --", '") OR 1=1 --', "8810; SELECT * FROM items", "%", "_",
    "*shared*", "bob", "owner:bob", "rowid:1", "rank:1", "\x00quokka", "quokka\x00 OR 8810", "８８１０",
    "Quokka-77", "quokka 77 " * 50,
]


def cand(content, tier="user", category=None):
    return MemoryCandidate(content=content, tier=tier, category=category,
                           provenance=Provenance(source="user_statement"))


class _Remembering:
    """The embedder, each batch's vectors kept: an escape's 144 searches embed its query once."""

    def __init__(self, inner):
        self._inner, self._seen = inner, {}
        self.name, self.dim = inner.name, inner.dim

    def embed(self, texts):
        key = tuple(texts)
        if key not in self._seen:
            self._seen[key] = self._inner.embed(texts)
        return self._seen[key].copy()


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    emb = _Remembering(embedder(tmp_path_factory))
    out = []
    for mode in ("exact", "bit_rerank"):
        store = SqliteMemory(tmp_path_factory.mktemp("adv") / f"{mode}.db", POLICY, embedder=emb, vector_mode=mode)
        for mine, theirs in FACTS:
            store.write(svc("alice"), cand(mine, category="alice"))
            store.write_many(svc("bob"), [cand(f"{theirs} {FOREIGN_MARK} copy {i}", category="bob") for i in range(30)])
        store.write(svc("bob"), cand(f"quokka review note {FOREIGN_MARK}", tier="review"))
        out.append(store)
    yield out
    for store in out:
        store.close()


def _foreign(hits) -> list[str]:
    return [h.item.content for h in hits if h.item.owner != "alice" or FOREIGN_MARK in h.item.content]


@pytest.mark.parametrize("query", ESCAPES)
def test_fts_syntax_never_reaches_a_foreign_owner(stores, query):
    searched = 0
    for store, mode, k in itertools.product(stores, ("hybrid", "keyword", "vector"), (1, 10, 50)):
        for caller in (svc("alice"), admin("alice")):
            for filters in (None, SearchFilters(include_superseded=True), SearchFilters(category="bob"),
                            SearchFilters(tiers=("user", "review"))):
                hits = store.search(caller, query, k=k, mode=mode, filters=filters)
                assert _foreign(hits) == [], (query, mode, k, filters)
                searched += 1
    assert searched == 2 * 3 * 3 * 2 * 4


def test_the_foreign_items_are_really_there_for_their_owner(stores):
    """The escapes above would have found bob's items: bob's own searches do."""
    for store in stores:
        for mode in ("hybrid", "keyword", "vector"):
            hits = store.search(svc("bob"), "quokka locker combination", k=50, mode=mode)
            assert hits and all(h.item.owner == "bob" for h in hits)
            assert any("quokka" in h.item.content for h in hits)


def test_category_filter_with_sql_text_stays_bound(stores):
    for store in stores:
        for category in ("bob' OR '1'='1", "alice' OR owner='bob", "%"):
            assert store.search(svc("alice"), "PIN", filters=SearchFilters(category=category)) == []
