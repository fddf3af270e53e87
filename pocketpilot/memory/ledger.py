"""The deletion ledger: what was deleted, kept so that no later export can bring it back.

A deleted memory leaves its id, its owner and its deletion time, plus keyed digests of its
*word windows* — never its text. That is the minimum that lets an exporter recognise text
that quotes a deleted memory (a trace in which the planner repeated it, a copy in another
store) without the ledger itself being a copy:

- Text is compared as words: casefolded, diacritics stripped, split on anything that is not
  a letter or digit (:func:`words`), so case, punctuation, quotes and JSON syntax do not
  hide a quote.
- A memory of at most :data:`QUOTE_WORDS` words is quoted only by a text that contains all
  its words in order; a longer one by any run of :data:`QUOTE_WORDS` of its words, so a
  truncated or partial copy still counts while stock phrases shorter than that do not. A
  memory of fewer than :data:`MIN_SPAN` words matches only a text that says exactly that.
- Secrets are redacted (:func:`.redaction.redact_secrets`) *before* the windows are hashed,
  and exports redact them too before matching, so the ledger holds no digest of a PIN or a
  password that a guesser could confirm by trying the 10,000 PINs.
- The digests are keyed BLAKE2b MACs under a key derived from the admin credential
  (:meth:`.access.AccessPolicy.ledger_key`), which the store file does not contain: a copy
  of the file alone cannot test guesses against the ledger. Whoever holds the admin
  credential can still test a guessed sentence; that is the price of matching quotes at all.

Entries are time-bounded: a text only counts as quoting a deleted memory if it is older
than the deletion. A fact the user states again after deleting it is new evidence, stored
and exported again like any other.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from .redaction import redact_secrets

__all__ = ["MIN_SPAN", "QUOTE_WORDS", "DeletionLedger", "quotes", "window_digests", "words"]

QUOTE_WORDS = 12
"""Words in a run that counts as quoting a longer memory."""
MIN_SPAN = 3
"""Memories shorter than this many words match only a text that says exactly the same."""
_WORD = re.compile(r"[^\W_]+")
_DIGEST_BYTES = 16


def words(text: str) -> list[str]:
    """Casefolded, diacritic-free word tokens (letters and digits; everything else separates)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return _WORD.findall("".join(c for c in decomposed if not unicodedata.combining(c)))


def _windows(tokens: list[str]) -> Iterator[tuple[str, ...]]:
    if len(tokens) <= QUOTE_WORDS:
        if tokens:
            yield tuple(tokens)
        return
    for i in range(len(tokens) - QUOTE_WORDS + 1):
        yield tuple(tokens[i : i + QUOTE_WORDS])


def _contains(haystack: list[str], needle: tuple[str, ...]) -> bool:
    n = len(needle)
    if n < MIN_SPAN:
        return tuple(haystack) == needle
    first = needle[0]
    return any(haystack[i] == first and tuple(haystack[i : i + n]) == needle
               for i in range(len(haystack) - n + 1))


def quotes(text: str, memory: str) -> bool:
    """Whether ``text`` quotes ``memory`` (plaintext comparison; see the module docstring)."""
    hay = words(text)
    return any(_contains(hay, w) for w in _windows(words(memory)))


def _digest(key: bytes, window: Iterable[str]) -> bytes:
    # keyed BLAKE2b is a MAC in one call, several times cheaper than HMAC for the many short
    # windows an export checks
    return hashlib.blake2b(" ".join(window).encode(), key=key[:64], digest_size=_DIGEST_BYTES).digest()


def window_digests(key: bytes, memory: str) -> dict[bytes, int]:
    """Keyed digest → window length, for each word window of ``memory`` with secrets redacted."""
    return {_digest(key, w): len(w) for w in _windows(words(redact_secrets(memory)))}


@dataclass
class DeletionLedger:
    """What exports must keep out: deleted ids, and digests of deleted text with deletion times.

    Build one with :meth:`.store.SqliteMemory.deletion_ledger`; merge the ledgers of several
    stores with ``|`` (each store's digests are keyed by its own admin credential).
    """

    keys: tuple[bytes, ...] = ()
    ids: dict[str, float] = field(default_factory=dict)
    """Deleted id → when it was deleted (epoch seconds)."""
    digests: dict[bytes, float] = field(default_factory=dict)
    """Window digest → the latest deletion time of a memory that had that window."""
    lengths: frozenset[int] = frozenset()
    """Window lengths present among the digests."""

    def __bool__(self) -> bool:
        return bool(self.ids or self.digests)

    def __or__(self, other: DeletionLedger) -> DeletionLedger:
        ids = dict(self.ids)
        for i, at in other.ids.items():
            ids[i] = max(at, ids.get(i, at))
        digests = dict(self.digests)
        for d, at in other.digests.items():
            digests[d] = max(at, digests.get(d, at))
        keys = tuple(dict.fromkeys([*self.keys, *other.keys]))
        return DeletionLedger(keys, ids, digests, self.lengths | other.lengths)

    def quotes(self, text: str, *, made_at: float | None = None) -> bool:
        """Whether ``text`` quotes a memory deleted after ``made_at`` (None: any deletion).

        ``text`` has its secrets redacted first, as the digests were made.
        """
        if not self.digests or not text:
            return False
        tokens = words(redact_secrets(text))
        for key in self.keys:
            for n in sorted(self.lengths):
                if n < MIN_SPAN:
                    candidates: Iterable[list[str]] = [tokens] if len(tokens) == n else []
                else:
                    candidates = (tokens[i : i + n] for i in range(len(tokens) - n + 1))
                for window in candidates:
                    at = self.digests.get(_digest(key, window))
                    if at is not None and (made_at is None or made_at <= at):
                        return True
        return False

    def quotes_any(self, texts: Iterable[str], *, made_at: float | None = None) -> bool:
        """Whether any of ``texts`` quotes a deleted memory (see :meth:`quotes`)."""
        return any(self.quotes(t, made_at=made_at) for t in texts)
