"""Deleting memories with every copy derived from them, and writing the deletion ledger.

A memory an episode used leaves copies behind: the captured tool result that carried it,
the episode summary, a ``memory_write`` that restated it, a consolidated fact built from it.
Deleting the memory deletes those too. They are found two ways, inside the owner's records:

- **provenance links** — an item whose evidence names a deleted id (``consolidated:…``) or
  that was consolidated into it, followed transitively;
- **text** — an item whose content quotes the deleted text (:func:`.ledger.quotes`: word
  for word, case and punctuation aside; candidates come from an FTS5 phrase query, then
  are checked exactly).

Only the text of the memories the caller named is matched, not the text of the copies
found: an episode summary's stock phrases must not cascade into every other summary.
"""

from __future__ import annotations

from typing import Any

from ._db import Database
from .ledger import QUOTE_WORDS, quotes, window_digests, words

__all__ = ["Row", "expand_derived", "record_deleted"]

Row = tuple[int, str, str]
"""``(rid, id, owner)`` of an item to delete."""
_BLOCK = QUOTE_WORDS // 2


def _phrases(text: str) -> list[str]:
    """FTS5 phrases at least one of which any quote of ``text`` must contain.

    A short memory is quoted whole, so its one phrase is all of it. A longer one is quoted by
    any run of QUOTE_WORDS words, and every such run holds one of the consecutive blocks of
    QUOTE_WORDS / 2 words that start at multiples of that.
    """
    tokens = words(text)
    if len(tokens) <= QUOTE_WORDS:
        blocks = [tokens] if tokens else []
    else:
        blocks = [tokens[i : i + _BLOCK] for i in range(0, len(tokens) - _BLOCK + 1, _BLOCK)]
    return ['"' + " ".join(b).replace('"', '""') + '"' for b in blocks]


def _quoting(db: Database, owner: str, content: str, chash: str) -> list[Row]:
    found = [(int(r), str(i), str(o)) for r, i, o in db.query(
        "SELECT rid, id, owner FROM items WHERE owner = ? AND content_hash = ?", (owner, chash))]
    phrases = _phrases(content)
    if not phrases:
        return found
    rows = db.query(
        "SELECT i.rid, i.id, i.owner, i.content, i.evidence FROM items_fts f CROSS JOIN items i ON i.rid = f.rowid "
        "WHERE items_fts MATCH ? AND i.owner = ?",
        (" OR ".join(phrases), owner),
    )
    found += [(int(r), str(i), str(o)) for r, i, o, text, evidence in rows
              if quotes(str(text), content) or (evidence and quotes(str(evidence), content))]
    return found


def expand_derived(db: Database, rows: list[Row]) -> list[Row]:
    """``rows`` plus every item derived from them (see the module docstring); call inside a transaction."""
    selected: dict[str, Row] = {r[1]: r for r in rows}
    for rid, _, owner in rows:
        got = db.query("SELECT content, content_hash FROM items WHERE rid = ?", (rid,))
        if got:
            for row in _quoting(db, owner, str(got[0][0]), str(got[0][1])):
                selected.setdefault(row[1], row)
    frontier = list(selected.values())
    while frontier:
        _, item_id, owner = frontier.pop()
        linked = db.query(
            "SELECT rid, id, owner FROM items WHERE owner = ? AND (consolidated_into = ? OR instr(evidence, ?) > 0)",
            (owner, item_id, item_id),
        )
        for rid, lid, lowner in linked:
            if lid not in selected:
                selected[lid] = (int(rid), str(lid), str(lowner))
                frontier.append(selected[lid])
    return list(selected.values())


def record_deleted(conn: Any, key: bytes, owner: str, item_id: str, content: str, now: float) -> None:
    """Add one deleted memory to the ledger: its id, and keyed digests of its word windows."""
    conn.execute("INSERT OR REPLACE INTO deleted(id, owner, deleted_at) VALUES (?, ?, ?)", (item_id, owner, now))
    conn.executemany(
        "INSERT INTO deleted_text(owner, digest, span, deleted_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(owner, digest) DO UPDATE SET deleted_at = max(deleted_at, excluded.deleted_at)",
        [(owner, digest, span, now) for digest, span in window_digests(key, content).items()],
    )
