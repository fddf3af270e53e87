"""Deleting memories with every copy derived from them, and writing the deletion ledger.

A memory an episode used leaves copies behind: the captured tool result that carried it,
the episode summary, a ``memory_write`` that restated it, a consolidated fact built from it.
Deleting the memory deletes those too. They are found two ways, inside the owner's records:

- **provenance links** — an item whose evidence names a deleted id (``consolidated:…``),
  followed transitively, and the items that were consolidated into a memory named for
  deletion;
- **text** — an item whose content quotes the deleted text (:func:`.ledger.quotes`: word
  for word, case and punctuation aside; candidates come from an FTS5 phrase query, then
  are checked exactly).

Only the text of the memories the caller named is matched, not the text of the copies
found: an episode summary's stock phrases must not cascade into every other summary.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from ._db import Database
from .ledger import QUOTE_WORDS, DeletionLedger, quotes, window_digests, words

if TYPE_CHECKING:
    from .vectors import VectorIndex

__all__ = ["Row", "delete_rows", "expand_derived", "load_ledger", "record_deleted"]

Row = tuple[int, str, str]
"""``(rid, id, owner)`` of an item to delete."""
_BLOCK = QUOTE_WORDS // 2
_RAW_WORD = re.compile(r"[^\W_]+")


def _phrases(text: str) -> list[str]:
    """FTS5 phrases at least one of which any quote of ``text`` must contain.

    A short memory is quoted whole, so its one phrase is all of it. A longer one is quoted by
    any run of QUOTE_WORDS words, and every such run holds one of the consecutive blocks of
    QUOTE_WORDS / 2 words that start at multiples of that. Each phrase comes twice: in the
    memory's own words and folded as :func:`.ledger.words` folds them, because FTS5 folds
    case and diacritics its own way ("ß" stays "ß", where casefolding gives "ss").
    """
    out: dict[str, None] = {}
    for tokens in (_RAW_WORD.findall(text), words(text)):
        if len(tokens) <= QUOTE_WORDS:
            blocks = [tokens] if tokens else []
        else:
            blocks = [tokens[i : i + _BLOCK] for i in range(0, len(tokens) - _BLOCK + 1, _BLOCK)]
        out.update(('"' + " ".join(b).replace('"', '""') + '"', None) for b in blocks)
    return list(out)


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
    """``rows`` plus every item derived from them (see the module docstring); call inside a transaction.

    A named item also takes the items consolidated into it (deleting a fact deletes the
    episodes that restated it); copies found along the way do not, so deleting one episode
    takes the fact built from it but not the other episodes of that fact.
    """
    selected: dict[str, Row] = {r[1]: r for r in rows}
    for rid, item_id, owner in rows:
        got = db.query("SELECT content, content_hash FROM items WHERE rid = ?", (rid,))
        if got:
            for row in _quoting(db, owner, str(got[0][0]), str(got[0][1])):
                selected.setdefault(row[1], row)
        for srid, sid, sowner in db.query(
            "SELECT rid, id, owner FROM items WHERE owner = ? AND consolidated_into = ?", (owner, item_id)
        ):
            selected.setdefault(str(sid), (int(srid), str(sid), str(sowner)))
    frontier = list(selected.values())
    while frontier:
        _, item_id, owner = frontier.pop()
        linked = db.query(
            "SELECT rid, id, owner FROM items WHERE owner = ? AND instr(evidence, ?) > 0", (owner, item_id)
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


def delete_rows(db: Database, vectors: VectorIndex | None, key: bytes, rows: list[Row], *, derived: bool) -> list[Row]:
    """Delete ``rows`` (plus their derived copies when ``derived``) in one transaction; returns what went.

    Each item leaves the base table (FTS follows by trigger) and the vector tables, its recall
    tags go, and the ledger records it; then the file is purged of the text
    (:meth:`.Database.purge_deleted_text`).
    """
    now = time.time()
    with db.transaction() as conn:
        if derived:
            rows = expand_derived(db, rows)
        for rid, item_id, owner in rows:
            got = db.query("SELECT content, content_hash FROM items WHERE rid = ?", (rid,))
            conn.execute("DELETE FROM items WHERE id = ?", (item_id,))
            # Recall tags go too: one left behind would still call a restatement of the fact
            # "recalled", and it holds the deleted content's hash.
            chash = got[0][1] if got else None
            conn.execute("DELETE FROM recalls WHERE owner = ? AND (item_id = ? OR content_hash = ?)",
                         (owner, item_id, chash))
            if got:
                record_deleted(conn, key, owner, item_id, str(got[0][0]), now)
        if vectors is not None:
            vectors.delete([r for r, _, _ in rows])
    db.purge_deleted_text()
    return rows


def load_ledger(db: Database, key: bytes, owner: str | None) -> DeletionLedger:
    """The ledger of ``owner``'s deletions (None: every owner's)."""
    where, params = ("", ()) if owner is None else (" WHERE owner = ?", (owner,))
    ids = {str(i): float(t) for i, t in db.query(f"SELECT id, deleted_at FROM deleted{where}", params)}
    digests: dict[bytes, float] = {}
    lengths: set[int] = set()
    for digest, span, at in db.query(f"SELECT digest, span, deleted_at FROM deleted_text{where}", params):
        digests[bytes(digest)] = max(float(at), digests.get(bytes(digest), 0.0))
        lengths.add(int(span))
    return DeletionLedger((key,), ids, digests, frozenset(lengths))
