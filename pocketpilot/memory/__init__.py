"""Five-tier persistent memory: hybrid BM25 + vector retrieval with provenance and access control.

Tiers: ``user`` (profile, preferences), ``episodic`` (what happened), ``long_term``
(consolidated facts), ``prospective`` (pending intents), ``review`` (candidates and conflicts).
Lifecycle: capture → verify → index → retrieve → consolidate → revise. Storage: one SQLite
file per store (apsw + sqlite-vec + FTS5, WAL). See DESIGN.md and issue 3.
"""

from __future__ import annotations

from .access import SHARED_OWNER, AccessPolicy, Caller
from .bound import BoundMemory
from .consolidate import ConsolidationReport, Consolidator, consolidate
from .embedders import Embedder, OnnxMiniLMEmbedder, SentenceTransformerEmbedder, load_default_embedder
from .errors import EmbedderUnavailableError, MemoryContentError, MemoryFileError
from .export import guard_episode, redact_row, scrub_episode
from .ledger import DeletionLedger
from .models import (
    TIERS,
    MemoryCandidate,
    MemoryItem,
    Provenance,
    SearchFilters,
    SearchHit,
    Tier,
    WriteResult,
)
from .redaction import Redactor, redact_secrets
from .store import SqliteMemory
from .verify import VerifyRules

SessionMemory = BoundMemory
"""Deprecated alias of :class:`BoundMemory` (its old name read as a session's chat history)."""
VerifyPolicy = VerifyRules
"""Deprecated alias of :class:`VerifyRules` (its old name read as one of the harness's policies)."""

__all__ = [
    "SHARED_OWNER",
    "TIERS",
    "AccessPolicy",
    "BoundMemory",
    "Caller",
    "ConsolidationReport",
    "Consolidator",
    "DeletionLedger",
    "Embedder",
    "EmbedderUnavailableError",
    "MemoryCandidate",
    "MemoryContentError",
    "MemoryFileError",
    "MemoryItem",
    "OnnxMiniLMEmbedder",
    "Provenance",
    "Redactor",
    "SearchFilters",
    "SearchHit",
    "SentenceTransformerEmbedder",
    "SessionMemory",
    "SqliteMemory",
    "Tier",
    "VerifyPolicy",
    "VerifyRules",
    "WriteResult",
    "consolidate",
    "guard_episode",
    "load_default_embedder",
    "redact_row",
    "redact_secrets",
    "scrub_episode",
]
