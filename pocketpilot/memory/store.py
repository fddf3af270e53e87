"""``SqliteMemory``: one store file — capture, verify, index, retrieve, revise, inspect, delete.

Synchronous and thread-safe (one lock per file); the async harness adapter
(:class:`~.bound.BoundMemory`) calls it off the event loop. Every public method takes a
:class:`~.access.Caller` and checks it before touching a row. Several stores may be open at
once (one per user, one shared); a *shared* store redacts personal details on the way in and
owns every record as :data:`~.access.SHARED_OWNER`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import MemoryAccessError, MemoryNotFoundError, MemorySchemaError
from ..ids import IdSource, random_ids
from ._db import Database
from ._deletion import Row, delete_rows, load_ledger
from ._rows import COLUMNS, check_content, content_hash, epoch, row_to_item
from .access import SHARED_OWNER, AccessPolicy, Caller, Operation
from .clock import Clock
from .embedders import Embedder
from .errors import MemoryContentError
from .fts import build_match_query
from .fusion import Candidate, FusionWeights, fuse, mmr
from .ledger import DeletionLedger
from .models import MemoryCandidate, MemoryItem, SearchFilters, SearchHit, Tier, WriteResult
from .redaction import Redactor
from .vectors import VectorIndex, VectorMode
from .verify import DEFAULT_TRUST, ExistingFact, VerifyDecision, VerifyRules, infer_key, verify

__all__ = ["SEARCH_TIERS", "RetrievalMode", "SqliteMemory"]

logger = logging.getLogger(__name__)

SEARCH_TIERS: tuple[Tier, ...] = ("user", "episodic", "long_term", "prospective")
"""Tiers searched by default; the review tier holds undecided candidates and is opt-in."""
MAX_K = 50
CONJUNCTIVE_ABOVE = 5_000
"""OR-matches above which the keyword side ranks the all-terms matches first (see ``_keyword_ranks``)."""
PARALLEL_ABOVE = 5_000
"""Vectors of an owner above which the BM25 side may run on a worker thread beside the query
embedding and vector scan (``overlap="auto"``, and only while a core is idle).

Below it the keyword side takes a millisecond or two and the hand-off is not worth it. Above
it, with the default single-threaded query embedder, overlapping was faster at every size
measured (10k: 7.8 ms p50 against 11.1 ms; 100k: 7.6 against 9.5; 1M: 27 against 53). On busy cores it hurts:
at 100k on 2 busy cores the worker made a search several times slower (50 ms p50 against
19 ms), because it waits for a core. ``bench_memory.py`` measures both orders at each size
in one run."""
RetrievalMode = Literal["hybrid", "keyword", "vector"]
Overlap = Literal["auto", "always", "never"]
MAX_TAKEN_DRAWS = 100_000
"""Ids in a row an id source may draw that the store already holds before a write gives up (a
seeded source reused on its own store skips what it minted before; a source that repeats one
id would loop for ever)."""


def _idle_core() -> bool:
    """Whether the machine has a core to spare right now (1-minute load below the core count).

    The load average counts the caller's own busy search thread: a process serving queries
    back to back on an otherwise idle 2-core machine shows a load of 1.5-1.7 (bench_memory.py),
    so "below cores - 0.5" read that as busy and kept a 10k search sequential (11.0 ms p50
    against 7.5 overlapped). Below the core count, one core is still free beside it.
    """
    cores = os.cpu_count() or 1
    try:
        return cores > 1 and os.getloadavg()[0] < cores
    except OSError:  # pragma: no cover - no load average on this platform
        return False


def _verify_rules(rules: VerifyRules | None, old: VerifyRules | None) -> VerifyRules:
    """``verify_rules``, or what a caller still passes under its old name ``verify_policy``."""
    if old is None:
        return rules or VerifyRules()
    if rules is not None:
        raise MemoryContentError("verify_policy is the old name of verify_rules: give one of them")
    warnings.warn("SqliteMemory(verify_policy=...) is deprecated: pass verify_rules", DeprecationWarning, stacklevel=3)
    return old


@dataclass
class _Candidates:
    """What each side of a search returned, before the filter runs on their union."""

    keyword: list[tuple[int, float]] = field(default_factory=list)
    vector: list[tuple[int, float]] = field(default_factory=list)
    vecs: dict[int, np.ndarray] = field(default_factory=dict)
    qvec: np.ndarray | None = None


class SqliteMemory:
    """A memory store in one SQLite file (apsw + sqlite-vec + FTS5)."""

    def __init__(
        self,
        path: str | Path,
        access: AccessPolicy,
        *,
        embedder: Embedder | None = None,
        query_embedder: Embedder | None = None,
        shared: bool = False,
        vector_mode: VectorMode = "auto",
        verify_rules: VerifyRules | None = None,
        redactor: Redactor | None = None,
        weights: FusionWeights | None = None,
        overlap: Overlap = "auto",
        verify_policy: VerifyRules | None = None,
        ids: IdSource | None = None,
        clock: Clock | None = None,
    ) -> None:
        """Open (create, migrate) the store at ``path``.

        Args:
            path: The store file (``:memory:`` for a throwaway store).
            access: Credentials every call is checked against.
            embedder: Vector backend; None means keyword-only retrieval (logged, and flagged on
                every result as ``keyword_only``).
            query_embedder: A faster variant of the same model for queries only (the int8
                MiniLM against fp32-written vectors: about half the query latency; its recall
                is measured in bench/bench_memory_bfcl.py). Default: ``embedder``.
            shared: A shared agent-experience store: writes are redacted and owned by
                :data:`SHARED_OWNER`.
            vector_mode: ``auto`` picks exact (small owners) or bit scan + exact rerank.
            verify_rules: The thresholds and allowed sources of verification (default: :class:`VerifyRules`).
            redactor: Redactor for shared stores (default: regex + heuristics, no known names).
            weights: Fusion weights.
            overlap: Run the keyword side on a worker thread while the query is embedded and
                the vectors scanned: ``auto`` for owners above :data:`PARALLEL_ABOVE` vectors
                while a core is idle, or ``always`` / ``never``.
            verify_policy: Deprecated: the old name of ``verify_rules``.
            ids: Mints the ids of new memories (default: random uuid4s). A seeded source
                (:class:`~pocketpilot.ids.SeededIds`) makes a fresh store made for one episode
                repeat its ids run after run; an id the store already holds, or has deleted, is
                skipped, so a seeded source on a store that outlives a run never collides.
            clock: Epoch seconds now, for the times the store stamps and reads them against: a
                memory's ``created_at`` (a search shows it), recall tags, recency and due times
                (default: the wall clock; an episode's store uses a :class:`~.clock.SteppedClock`).
                The wall clock still judges evidence from the future (an episode records wall-clock
                times) and stamps deletions (the ledger compares them with the traces it scrubs).

        Raises:
            MemorySchemaError: Newer schema, foreign or corrupt file, or vectors of another
                embedder (dimension or model differ).
            MemoryAccessError: The file was created with other service/admin credentials.
            MemoryContentError: ``query_embedder`` is not a variant of ``embedder``'s model, or both
                ``verify_rules`` and its old name ``verify_policy`` are given.
        """
        if embedder is not None and query_embedder is not None and (
            query_embedder.name.split("/")[0] != embedder.name.split("/")[0] or query_embedder.dim != embedder.dim
        ):
            raise MemoryContentError(
                f"query embedder {query_embedder.name} is not a variant of {embedder.name}; vectors would not compare"
            )
        self._db = Database(path)
        self.path = self._db.path
        self._access = access
        self._embedder = embedder
        self._query_embedder = (query_embedder or embedder) if embedder is not None else None
        self.shared = shared
        self._rules = _verify_rules(verify_rules, verify_policy)
        self._redactor = redactor or Redactor()
        self._weights = weights or FusionWeights()
        if overlap not in ("auto", "always", "never"):
            raise MemoryContentError(f"overlap must be auto, always or never, not {overlap!r}")
        self.overlap: Overlap = overlap
        self._ids: IdSource = ids or random_ids()
        self._clock: Clock = clock or time.time
        self._keyword_pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._vectors: VectorIndex | None = None
        try:
            self._bind_credentials()
            self._init_vectors(vector_mode)
        except BaseException:
            self._db.close()
            raise

    def _bind_credentials(self) -> None:
        # The first opener's credentials are bound to the file; opening it later with other
        # tokens (a forged admin credential on the CLI, say) fails before any read.
        fingerprint = self._access.fingerprint()
        with self._db.transaction():
            stored = self._db.get_meta("access_fingerprint")
            if stored is None:
                self._db.set_meta("access_fingerprint", fingerprint)
            elif stored != fingerprint:
                raise MemoryAccessError(f"{self.path}: these credentials do not match the store's")

    def _init_vectors(self, mode: VectorMode) -> None:
        stored_name, stored_dim = self._db.get_meta("embedder"), self._db.get_meta("dim")
        if self._embedder is None:
            # info, not a warning: a run opens several stores, and says it once itself
            logger.info("%s: no embedder, retrieval is keyword-only (BM25)", self.path)
            if stored_dim is not None:
                self._vectors = VectorIndex(self._db, int(stored_dim), mode)  # deletes must reach it
            return
        name, dim = self._embedder.name, int(self._embedder.dim)
        if stored_name is not None and (stored_name.split("/")[0] != name.split("/")[0] or int(stored_dim or 0) != dim):
            raise MemorySchemaError(
                f"{self.path}: vectors were made by {stored_name} (dim {stored_dim}), not {name} (dim {dim})"
            )
        with self._db.transaction():
            self._db.set_meta("embedder", name)
            self._db.set_meta("dim", str(dim))
        self._vectors = VectorIndex(self._db, dim, mode)
        self.index_missing_vectors()

    # ------------------------------------------------------------------ properties

    @property
    def keyword_only(self) -> bool:
        """True when no embedder is available: retrieval uses BM25 alone."""
        return self._embedder is None

    @property
    def embedder(self) -> Embedder | None:
        """The embedder in use, if any."""
        return self._embedder

    def close(self) -> None:
        """Close the file (waits for a keyword search in flight; the worker thread never outlives the store)."""
        with self._pool_lock:
            if self._keyword_pool is not None:
                self._keyword_pool.shutdown(wait=True)
                self._keyword_pool = None
        self._db.close()

    def __enter__(self) -> SqliteMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ access helpers

    def _owner_for(self, caller: Caller, op: Operation) -> str:
        owner = SHARED_OWNER if self.shared else caller.subject
        if owner is None:
            raise MemoryAccessError(f"an admin must set acting_for to {op} a user's memories")
        self._access.check(caller, op, owner)
        return owner

    def _row(self, caller: Caller, item_id: str, op: Operation) -> Any:
        self._access.authenticate(caller)
        rows = self._db.query(f"SELECT {COLUMNS} FROM items WHERE id = ?", (str(item_id),))
        if not rows:
            raise MemoryNotFoundError(item_id)
        self._access.check(caller, op, rows[0][2])
        return rows[0]

    # ------------------------------------------------------------------ capture → verify → index

    def write(self, caller: Caller, candidate: MemoryCandidate) -> WriteResult:
        """Capture one candidate: validate, (redact), verify, index. See :meth:`write_many`."""
        return self.write_many(caller, [candidate])[0]

    def write_many(self, caller: Caller, candidates: Sequence[MemoryCandidate]) -> list[WriteResult]:
        """Capture candidates in one transaction with one embedding batch.

        Each is verified (:func:`.verify.verify`): accepted as authoritative, superseding an
        older item explicitly, parked in the review tier, or recognised as a duplicate or as
        recalled material (not new evidence). Evidence counts as stale when it is older than
        the owner's newest event by more than the verification rules' ``max_age``, not older
        than the wall clock: a history that simply happened long ago is not stale.

        Raises:
            MemoryAccessError: The caller may not write here.
            MemoryContentError: Empty, oversized or binary content (nothing is written).
        """
        return self._write_batch(caller, candidates, imported=False)

    def import_history(self, caller: Caller, candidates: Sequence[MemoryCandidate]) -> list[WriteResult]:
        """Import dated history (a conversation export, notes): kept active with their event times.

        Every candidate must carry ``provenance.observed_at``. They are written oldest first
        (results come back in the order given), so a later fact with the same key supersedes
        an earlier one as it did when it happened, and no age check applies: what an import
        brings is history, and history is not stale.
        The other checks (trust, provenance, conflicts with newer facts) still hold, and a
        candidate they send to review comes back with ``WriteResult.in_review`` set.

        Raises:
            MemoryContentError: A candidate has no ``observed_at`` (nothing is written).
        """
        undated = [i for i, c in enumerate(candidates) if c.provenance.observed_at is None]
        if undated:
            raise MemoryContentError(f"import needs provenance.observed_at on every item; missing at {undated[:10]}")
        when = [c.provenance.observed_at.timestamp() for c in candidates]  # type: ignore[union-attr]
        order = sorted(range(len(candidates)), key=when.__getitem__)
        results = self._write_batch(caller, [candidates[i] for i in order], imported=True)
        by_index = dict(zip(order, results, strict=True))
        return [by_index[i] for i in range(len(candidates))]

    def _write_batch(self, caller: Caller, candidates: Sequence[MemoryCandidate], *, imported: bool) -> list[WriteResult]:
        owner = self._owner_for(caller, "write")
        prepared = [self._prepare(c) for c in candidates]
        vectors = None
        if self._embedder is not None and self._vectors is not None and prepared:
            vectors = self._embedder.embed([c.content for c, _ in prepared])
        now = self._clock()
        results: list[WriteResult] = []
        with self._db.transaction():
            for i, (cand, chash) in enumerate(prepared):
                vec = None if vectors is None else vectors[i]
                results.append(self._write_one(owner, cand, chash, vec, now, imported=imported))
        for result in results:
            if result.in_review:
                logger.warning("%s: memory %s went to REVIEW, not searchable by default: %s",
                               self.path, result.id, result.reason)
        return results

    def _prepare(self, cand: MemoryCandidate) -> tuple[MemoryCandidate, str]:
        content = check_content(cand.content)
        if self.shared:
            red = self._redactor.redact(content)
            if red.changed:
                logger.info("redacted %s before the shared store", red.counts)
            evidence = self._redactor.redact(cand.provenance.evidence).text if cand.provenance.evidence else None
            cand = cand.model_copy(
                update={"content": red.text, "provenance": cand.provenance.model_copy(update={"evidence": evidence})}
            )
        elif content != cand.content:
            cand = cand.model_copy(update={"content": content})
        if cand.key is None:
            cand = cand.model_copy(update={"key": infer_key(cand.content)})
        return cand, content_hash(cand.content)

    def _write_one(
        self, owner: str, cand: MemoryCandidate, chash: str, vec: np.ndarray | None, now: float,
        *, imported: bool = False,
    ) -> WriteResult:
        prov = cand.provenance
        if prov.recalled or (prov.session_id and self._recalled_in(prov.session_id, chash)):
            hit = self._db.scalar(
                "SELECT r.item_id FROM recalls r JOIN items i ON i.id = r.item_id "
                "WHERE r.content_hash = ? AND r.owner = ? LIMIT 1", (chash, owner)
            )
            existing = hit or self._db.scalar("SELECT id FROM items WHERE owner = ? AND content_hash = ?",
                                              (owner, chash))
            if existing:
                return WriteResult(id=existing, status="recalled", tier=cand.tier,
                                   reason="recalled into a context earlier; not new evidence")
        trust = prov.trust if prov.trust is not None else DEFAULT_TRUST[prov.source]
        observed = prov.observed_at.timestamp() if prov.observed_at else now
        dup = self._db.query(
            "SELECT id, content_hash, trust, observed_at FROM items WHERE owner = ? AND content_hash = ? "
            "AND status IN ('active', 'candidate') AND (tier = ? OR proposed_tier = ?) LIMIT 1",
            (owner, chash, cand.tier, cand.tier),
        )
        # Newest first down the (owner, observed_at) index, stopping at the first non-review
        # row: one probe, where max() with the tier filter would scan the owner's rows.
        newest = self._db.scalar(
            "SELECT observed_at FROM items WHERE owner = ? AND tier != 'review' ORDER BY observed_at DESC LIMIT 1",
            (owner,),
        )
        same_key: list[ExistingFact] = []
        if cand.key:
            rows = self._db.query(
                "SELECT id, content_hash, trust, observed_at FROM items "
                "WHERE owner = ? AND key = ? AND tier = ? AND status = 'active'",
                (owner, cand.key, cand.tier),
            )
            same_key = [_fact(r) for r in rows]
        decision = verify(
            cand,
            trust=trust,
            content_hash=chash,
            observed_at=datetime.fromtimestamp(observed, tz=UTC),
            same_key=same_key,
            same_content=_fact(dup[0]) if dup else None,
            # the wall clock too: a stepped clock may run behind the times an episode records
            now=datetime.fromtimestamp(max(now, time.time()), tz=UTC),
            rules=self._rules,
            newest_event=None if newest is None else datetime.fromtimestamp(float(newest), tz=UTC),
            check_age=not imported,
        )
        if decision.action == "duplicate":
            assert decision.target is not None
            return WriteResult(id=decision.target, status="duplicate", tier=cand.tier, reason=decision.reason)
        new_id = self._new_id()
        self._insert(new_id, owner, cand, chash, trust, observed, now, decision, vec)
        if decision.action == "review":
            return WriteResult(id=new_id, status="candidate", tier="review", reason=decision.reason)
        if decision.action == "supersede":
            assert decision.target is not None
            self._mark_superseded(decision.target, new_id)
            return WriteResult(id=new_id, status="active", tier=cand.tier, reason=decision.reason,
                               superseded=decision.target)
        return WriteResult(id=new_id, status="active", tier=cand.tier)

    def _new_id(self) -> str:
        """The source's next id that no memory of this file holds or held (called inside the write's transaction)."""
        for _ in range(MAX_TAKEN_DRAWS):
            new_id = self._ids.new_id()
            if self._db.scalar("SELECT EXISTS(SELECT 1 FROM items WHERE id = ?) OR "
                               "EXISTS(SELECT 1 FROM deleted WHERE id = ?)", (new_id, new_id)) == 0:
                return new_id
        raise MemoryContentError(f"{self._ids!r} drew {MAX_TAKEN_DRAWS} ids in a row that {self.path} already holds")

    def _insert(
        self, new_id: str, owner: str, cand: MemoryCandidate, chash: str, trust: float, observed: float,
        now: float, decision: VerifyDecision, vec: np.ndarray | None,
    ) -> None:
        review = decision.action == "review"
        tier = "review" if review else cand.tier
        prov = cand.provenance
        conn = self._db.conn
        conn.execute(
            "INSERT INTO items(id, owner, tier, proposed_tier, category, key, content, content_hash, status, "
            "importance, trust, source, session_id, step, observed_at, evidence, created_at, state, due_at, "
            "due_condition, supersedes, conflicts_with, review_reason, has_vector) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                new_id, owner, tier, cand.tier if review else None, cand.category, cand.key, cand.content,
                chash, "candidate" if review else "active", cand.importance, trust, prov.source,
                prov.session_id, prov.step, observed, prov.evidence, now,
                "pending" if cand.tier == "prospective" else None,
                epoch(cand.due_at) if cand.due_at else None, cand.due_condition,
                decision.target if decision.action == "supersede" else None,
                decision.target if review else None,
                decision.reason if review else None,
                int(vec is not None),
            ),
        )
        if vec is not None and self._vectors is not None:
            rid = int(conn.last_insert_rowid())
            self._vectors.add(rid, owner, tier, True, vec)

    def _mark_superseded(self, old_id: str, new_id: str) -> None:
        self._db.conn.execute(
            "UPDATE items SET status = 'superseded', superseded_by = ? WHERE id = ?", (new_id, old_id)
        )
        self._sync_vector_meta(old_id)

    def _sync_vector_meta(self, item_id: str) -> None:
        if self._vectors is None:
            return
        row = self._db.query("SELECT rid, tier, status, has_vector FROM items WHERE id = ?", (item_id,))
        if row and row[0][3]:
            rid, tier, status, _ = row[0]
            self._vectors.update(rid, tier=tier, live=status in ("active", "candidate"))

    def _recalled_in(self, session_id: str, chash: str) -> bool:
        return bool(self._db.scalar(
            "SELECT 1 FROM recalls WHERE session_id = ? AND content_hash = ?", (session_id, chash)
        ))

    def index_missing_vectors(self, batch: int = 256) -> int:
        """Embed items written while no embedder was available; returns how many were indexed."""
        if self._embedder is None or self._vectors is None:
            return 0
        done = 0
        while True:
            rows = self._db.query(
                "SELECT rid, owner, tier, status, content FROM items WHERE has_vector = 0 LIMIT ?", (batch,)
            )
            if not rows:
                return done
            vecs = self._embedder.embed([r[4] for r in rows])
            with self._db.transaction() as conn:
                for (rid, owner, tier, status, _), vec in zip(rows, vecs, strict=True):
                    self._vectors.add(rid, owner, tier, status in ("active", "candidate"), vec)
                    conn.execute("UPDATE items SET has_vector = 1 WHERE rid = ?", (rid,))
            done += len(rows)

    # ------------------------------------------------------------------ retrieve

    def search(
        self, caller: Caller, query: str, *, k: int = 5, filters: SearchFilters | None = None,
        mode: RetrievalMode = "hybrid",
    ) -> list[SearchHit]:
        """Hybrid retrieval of the caller's memories: BM25 + vector fused (convex by default), recency, importance, MMR.

        Any text is a valid query (it is never passed to FTS5 raw); results are evidence with
        provenance, never instructions. ``mode`` ``keyword`` or ``vector`` uses one side only
        (ablations and benchmarks; the rest of the ranking is unchanged).

        Raises:
            MemoryAccessError: Bad credential or no right to read this owner's memories.
            MemoryContentError: ``query`` is not text, ``k`` is out of range, or ``mode`` unknown.
        """
        owner = self._owner_for(caller, "read")
        if mode not in ("hybrid", "keyword", "vector"):
            raise MemoryContentError(f"unknown retrieval mode {mode!r}")
        if not isinstance(query, str):
            raise MemoryContentError(f"query must be str, not {type(query).__name__}")
        if not 1 <= int(k) <= MAX_K:
            raise MemoryContentError(f"k must be between 1 and {MAX_K}")
        filters = filters or SearchFilters()
        tiers = tuple(filters.tiers or SEARCH_TIERS)
        statuses = ["active", "candidate"] + (["superseded"] if filters.include_superseded else [])
        where, params = _filter_sql(owner, tiers, statuses, filters)
        found = self._candidates(owner, query, mode, tiers, filters, where, params, pool=max(50, 5 * k))
        meta = self._filtered(found, where, params)
        if meta is None:
            return []
        picked = self._fused(found, meta, owner, k)
        return self._hits(picked)

    def _candidates(
        self, owner: str, query: str, mode: RetrievalMode, tiers: tuple[Tier, ...], filters: SearchFilters,
        where: str, params: list[Any], *, pool: int,
    ) -> _Candidates:
        """The ``pool`` best of each side: BM25 ranks, and the vector side's ranks and vectors."""
        use_vectors = (mode != "keyword" and self._query_embedder is not None and self._vectors is not None
                       and bool(query.strip()))
        pending: Future[list[tuple[int, float]]] | None = None
        found = _Candidates()
        if mode == "vector":
            pass
        elif use_vectors and self._db.has_reader and self._overlaps(owner):
            # BM25 on the reader connection in a worker, overlapping the embedding and vector scan.
            pending = self._keyword_worker().submit(self._keyword_ranks, query, where, params, pool)
        else:
            found.keyword = self._keyword_ranks(query, where, params, pool)
        try:
            if use_vectors:
                assert self._query_embedder is not None and self._vectors is not None
                found.qvec = self._query_embedder.embed([query[:2000]])[0]
                vector, found.vecs = self._vectors.search(
                    found.qvec, owner, pool, tiers=tiers, live_only=not filters.include_superseded
                )
                found.vector = [(r, c) for r, c in vector if c >= self._weights.min_cosine]
        finally:
            if pending is not None:
                found.keyword = pending.result()  # never leave the worker's query orphaned, even on error
        return found

    def _filtered(self, found: _Candidates, where: str, params: list[Any]) -> dict[int, tuple[float, float]] | None:
        """Observed time and importance of the union's items that pass the filter; None when there is no candidate."""
        rids = list(dict.fromkeys([*(r for r, _ in found.keyword), *(r for r, _ in found.vector)]))
        if not rids:
            return None
        marks = ",".join("?" * len(rids))
        # The filter again, on the union: owner, tier, status, category and time are enforced
        # here for both sides, whatever the indexes returned.
        meta_rows = self._db.query(
            f"SELECT i.rid, i.observed_at, i.importance FROM items i WHERE i.rid IN ({marks}) AND {where}",
            [*rids, *params],
        )
        return {int(r): (float(t), float(imp)) for r, t, imp in meta_rows}

    def _fused(
        self, found: _Candidates, meta: dict[int, tuple[float, float]], owner: str, k: int
    ) -> list[tuple[Candidate, float]]:
        """Both sides fused with recency and importance, then ``k`` picked for diversity (MMR)."""
        qvec, vecs = found.qvec, found.vecs
        cosines: dict[int, float] = {}
        if qvec is not None and self._vectors is not None:
            missing = [r for r in meta if r not in vecs]  # keyword-only hits: their cosine counts too
            if missing:
                extra = self._vectors.vectors(missing, owner)
                cosines = {r: float(v @ qvec) for r, v in extra.items()}
                vecs = {**vecs, **extra}
        ranked = fuse(found.keyword, found.vector, meta, self._clock(), self._weights, cosines)[: 4 * k]
        texts: dict[int, str] = {}
        if qvec is None or any(c.rid not in vecs for c in ranked):
            # MMR falls back to word overlap for items without a vector, and compares them
            # with every other candidate, so the texts of the whole shortlist are needed.
            marks = ",".join("?" * len(ranked))
            texts = {int(r): str(c) for r, c in self._db.query(
                f"SELECT rid, content FROM items WHERE rid IN ({marks})", [c.rid for c in ranked])}
        return mmr(ranked, k, self._weights.mmr_lambda, vecs if qvec is not None else None, texts)

    def _hits(self, picked: list[tuple[Candidate, float]]) -> list[SearchHit]:
        """The picked items with every score that ranked them (evidence, never instructions)."""
        items = self._items_by_rid([c.rid for c, _ in picked])
        hits = []
        for cand, mmr_score in picked:
            scores = {"rrf": cand.rrf, "recency": cand.recency, "importance": cand.importance, "mmr": mmr_score}
            if cand.bm25_rank is not None:
                scores["bm25_rank"] = float(cand.bm25_rank)
                scores["bm25"] = float(cand.bm25 or 0.0)
            if cand.vector_rank is not None:
                scores["vector_rank"] = float(cand.vector_rank)
                scores["cosine"] = float(cand.cosine or 0.0)
            hits.append(SearchHit(item=items[cand.rid], score=cand.score, scores=scores,
                                  keyword_only=self._embedder is None))
        return hits

    def _overlaps(self, owner: str) -> bool:
        if self.overlap != "auto":
            return self.overlap == "always"
        assert self._vectors is not None
        return self._vectors.loaded(owner) > PARALLEL_ABOVE and _idle_core()

    def _keyword_worker(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._keyword_pool is None:
                self._keyword_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pp-memory-bm25")
            return self._keyword_pool

    def _keyword_ranks(self, query: str, where: str, params: list[Any], pool: int) -> list[tuple[int, float]]:
        """``(rid, BM25 score)`` of the ``pool`` best matches that pass the filter, best first.

        FTS5 scores every document that matches the OR of the query terms (~1 µs each), so
        in a large store a query made only of common words costs tens of milliseconds
        (17 ms for 13k matches at 100k items, bench/bench_memory.py). When the OR would match
        more than :data:`CONJUNCTIVE_ABOVE` rows and the documents containing *every* term
        fill the pool, only those are ranked: they are the ones BM25 puts first (each
        matched term adds a positive IDF share), and counting the OR first is cheap because
        counting skips scoring. Otherwise, and for one-term queries, the ranking is the
        exact OR ranking. ``bench_memory.py`` reports how often the fast path changes the
        top-10.
        """
        text = query.replace("\x00", " ")
        match = build_match_query(text)
        if match is None:
            return []
        if " OR " in match and self._match_count(match, CONJUNCTIVE_ABOVE + 1) > CONJUNCTIVE_ABOVE:
            both = build_match_query(text, "AND")
            assert both is not None
            ranked = self._bm25_ranks(both, where, params, pool)
            if len(ranked) >= pool:
                return ranked
        return self._bm25_ranks(match, where, params, pool)

    def _match_count(self, match: str, cap: int) -> int:
        """How many rows match, counted up to ``cap`` (a full count at 1M items costs ~20 ms)."""
        sql = "SELECT count(*) FROM (SELECT 1 FROM items_fts WHERE items_fts MATCH ? LIMIT ?)"
        return int(self._db.read_query(sql, (match, cap))[0][0])

    def _bm25_ranks(self, match: str, where: str, params: list[Any], pool: int) -> list[tuple[int, float]]:
        """The ``pool`` best BM25 rows of one MATCH expression that pass the filter.

        FTS5 ranks its matches alone first (``LIMIT`` inside the subquery), so the join and
        the filter touch a few hundred rows instead of every match. Matches of other owners,
        tiers or statuses can crowd the limited list, so when the filter leaves fewer than
        ``pool`` of a full list, the limit grows (x8) until it covers every match.
        """
        inner = "SELECT rowid, bm25(items_fts, 1.0, 0.3) AS score FROM items_fts WHERE items_fts MATCH ?"
        limit = 4 * pool
        while True:
            rows = self._db.read_query(
                # CROSS JOIN pins the ranked rows as the outer loop: with a plain JOIN SQLite
                # prefers scanning the owner index (every row of the owner) and probing the
                # ranked rows, 5x slower at 100k items.
                f"SELECT f.rowid, -f.score FROM ({inner} ORDER BY score LIMIT ?) f CROSS JOIN items i ON i.rid = f.rowid "
                f"WHERE {where} ORDER BY f.score LIMIT ?",
                [match, limit, *params, pool],
            )
            # FTS5's bm25() is negative, lower is better; the score returned is its negation.
            ranked = [(int(r), float(score)) for r, score in rows]
            if len(rows) >= pool:
                return ranked
            matched = self._match_count(match, limit * 8)
            if matched <= limit:
                return ranked
            limit = min(matched, limit * 8)

    def _items_by_rid(self, rids: Sequence[int]) -> dict[int, MemoryItem]:
        if not rids:
            return {}
        marks = ",".join("?" * len(rids))
        rows = self._db.query(f"SELECT {COLUMNS} FROM items WHERE rid IN ({marks})", tuple(rids))
        return {int(r[0]): row_to_item(r) for r in rows}

    # ------------------------------------------------------------------ read / inspect

    def get(self, caller: Caller, item_id: str) -> MemoryItem:
        """One item by id (any status).

        Raises:
            MemoryNotFoundError: No such id (or it was deleted).
            MemoryAccessError: It belongs to an owner the caller may not read.
        """
        return row_to_item(self._row(caller, item_id, "read"))

    def history(self, caller: Caller, item_id: str) -> list[MemoryItem]:
        """The supersession chain through ``item_id``, oldest first (history stays queryable)."""
        item = self.get(caller, item_id)
        chain = [item]
        while chain[0].supersedes:
            try:
                chain.insert(0, self.get(caller, chain[0].supersedes))
            except MemoryNotFoundError:
                break  # the older version was deleted by its owner
        while chain[-1].superseded_by:
            try:
                chain.append(self.get(caller, chain[-1].superseded_by))
            except MemoryNotFoundError:
                break
        return chain

    def list_items(
        self, caller: Caller, *, tier: Tier | None = None, status: str | None = None, limit: int = 1000,
        offset: int = 0,
    ) -> list[MemoryItem]:
        """The caller's items, newest first (an admin without ``acting_for`` sees every owner)."""
        sql, params = f"SELECT {COLUMNS} FROM items WHERE 1=1", []
        if self.shared or caller.subject is not None:
            sql += " AND owner = ?"
            params.append(self._owner_for(caller, "read"))
        else:
            self._access.check(caller, "read", None)
        if tier:
            sql += " AND tier = ?"
            params.append(tier)
        if status:
            sql += " AND status = ?"
            params.append(status)
        sql += " ORDER BY created_at DESC, rid DESC LIMIT ? OFFSET ?"
        params += [int(limit), int(offset)]
        return [row_to_item(r) for r in self._db.query(sql, params)]

    def stats(self, caller: Caller) -> dict[str, Any]:
        """Counts by tier and status, plus retrieval mode, for ``inspect``."""
        items = self.list_items(caller, limit=10**9)
        counts: dict[str, dict[str, int]] = {}
        for item in items:
            counts.setdefault(item.tier, {}).setdefault(item.status, 0)
            counts[item.tier][item.status] += 1
        return {
            "path": self.path,
            "shared": self.shared,
            "keyword_only": self.keyword_only,
            "embedder": self._embedder.name if self._embedder else None,
            "items": len(items),
            "by_tier": counts,
        }

    def item_vectors(self, caller: Caller, item_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored float vectors of the caller's items (for consolidation and diagnostics)."""
        if self._vectors is None or not item_ids:
            return {}
        rids = {}
        for item_id in item_ids:
            row = self._row(caller, item_id, "read")
            rids[int(row[0])] = item_id
        return {rids[r]: v for r, v in self._vectors.vectors(list(rids)).items()}

    # ------------------------------------------------------------------ revise / review / prospective

    def supersede(self, caller: Caller, old_id: str, candidate: MemoryCandidate) -> WriteResult:
        """Replace ``old_id`` with new evidence explicitly: the old item stays, marked and linked."""
        row = self._row(caller, old_id, "write")
        if row[8] != "active":
            raise MemoryContentError(f"{old_id} is {row[8]}, only an active item can be superseded")
        owner = self._owner_for(caller, "write")
        cand, chash = self._prepare(candidate)
        vec = self._embedder.embed([cand.content])[0] if self._embedder and self._vectors else None
        trust = cand.provenance.trust if cand.provenance.trust is not None else DEFAULT_TRUST[cand.provenance.source]
        now = self._clock()
        observed = cand.provenance.observed_at.timestamp() if cand.provenance.observed_at else now
        decision = VerifyDecision("supersede", "explicit revision", old_id)
        with self._db.transaction():
            new_id = self._new_id()
            self._insert(new_id, owner, cand, chash, trust, observed, now, decision, vec)
            self._mark_superseded(old_id, new_id)
        return WriteResult(id=new_id, status="active", tier=cand.tier, reason="explicit revision",
                           superseded=old_id)

    def review_queue(self, caller: Caller) -> list[MemoryItem]:
        """Candidates and conflicts waiting for a decision."""
        return self.list_items(caller, tier="review", status="candidate")

    def resolve_review(self, caller: Caller, item_id: str, *, accept: bool) -> MemoryItem:
        """Accept a review item into its proposed tier (superseding what it conflicted with) or reject it.

        Only the owner or an admin decides; the service token may not.
        """
        row = self._row(caller, item_id, "review")
        item = row_to_item(row)
        if item.tier != "review" or item.status != "candidate":
            raise MemoryContentError(f"{item_id} is not waiting for review")
        with self._db.transaction() as conn:
            if not accept:
                conn.execute("UPDATE items SET status = 'rejected' WHERE id = ?", (item_id,))
            else:
                target = item.conflicts_with
                active = target and self._db.scalar("SELECT status FROM items WHERE id = ?", (target,)) == "active"
                conn.execute(
                    "UPDATE items SET tier = proposed_tier, status = 'active', supersedes = ? WHERE id = ?",
                    (target if active else None, item_id),
                )
                if active and target:
                    self._mark_superseded(target, item_id)
            self._sync_vector_meta(item_id)
        return self.get(caller, item_id)

    def set_state(self, caller: Caller, item_id: str, state: str) -> MemoryItem:
        """Move a prospective intent to ``pending``, ``done`` or ``cancelled``."""
        row = self._row(caller, item_id, "write")
        if row[3] != "prospective":
            raise MemoryContentError(f"{item_id} is a {row[3]} item; only prospective items have a state")
        if state not in ("pending", "done", "cancelled"):
            raise MemoryContentError(f"unknown prospective state {state!r}")
        with self._db.transaction() as conn:
            conn.execute("UPDATE items SET state = ? WHERE id = ?", (state, item_id))
        return self.get(caller, item_id)

    def due(self, caller: Caller, now: datetime | None = None) -> list[MemoryItem]:
        """Pending prospective intents whose due time has come (or that have only a condition)."""
        owner = self._owner_for(caller, "read")
        at = epoch(now) if now else self._clock()
        rows = self._db.query(
            f"SELECT {COLUMNS} FROM items WHERE owner = ? AND tier = 'prospective' AND status = 'active' "
            "AND state = 'pending' AND (due_at IS NULL OR due_at <= ?) ORDER BY due_at",
            (owner, at),
        )
        return [row_to_item(r) for r in rows]

    # ------------------------------------------------------------------ recall tagging

    def mark_recalled(self, caller: Caller, session_id: str, item_ids: Sequence[str]) -> None:
        """Tag items shown in ``session_id``'s context so re-capturing them is not new evidence."""
        owner = self._owner_for(caller, "read")
        now = self._clock()
        with self._db.transaction() as conn:
            for item_id in item_ids:
                row = self._db.query("SELECT content_hash, owner FROM items WHERE id = ?", (item_id,))
                if not row or row[0][1] != owner:
                    continue
                conn.execute(
                    "INSERT OR IGNORE INTO recalls(session_id, content_hash, item_id, owner, at) VALUES (?,?,?,?,?)",
                    (session_id, row[0][0], item_id, owner, now),
                )
                conn.execute(
                    "UPDATE items SET recall_count = recall_count + 1, last_recalled_at = ? WHERE id = ?",
                    (now, item_id),
                )

    def was_recalled(self, caller: Caller, session_id: str, content: str) -> str | None:
        """Id of the recalled item whose content equals ``content`` in that session, if any."""
        owner = self._owner_for(caller, "read")
        hit = self._db.scalar(
            "SELECT item_id FROM recalls WHERE session_id = ? AND content_hash = ? AND owner = ?",
            (session_id, content_hash(content), owner),
        )
        return None if hit is None else str(hit)

    # ------------------------------------------------------------------ consolidation support

    def link_consolidated(self, caller: Caller, item_ids: Sequence[str], into: str) -> None:
        """Record that episodic ``item_ids`` were consolidated into long-term item ``into``."""
        self._row(caller, into, "write")
        with self._db.transaction() as conn:
            for item_id in item_ids:
                self._row(caller, item_id, "write")
                conn.execute("UPDATE items SET consolidated_into = ? WHERE id = ?", (into, item_id))

    # ------------------------------------------------------------------ export / delete

    def export(self, caller: Caller) -> list[dict[str, Any]]:
        """Every item of the caller (history included) as JSON-ready dicts; deleted items are gone.

        The deletion ledger is consulted as well: an item made before a deletion that quotes
        the deleted text is left out, whatever route it took into the store. (An item written
        after the deletion is new evidence, such as the user saying it again, and is exported.)
        """
        owner = self._owner_for(caller, "export")
        rows = self._db.query(f"SELECT {COLUMNS} FROM items WHERE owner = ? ORDER BY created_at, rid", (owner,))
        items = [row_to_item(r) for r in rows]
        ledger = self._ledger(owner)
        if ledger:
            kept = [it for it in items if not ledger.quotes_any(
                [it.content, it.provenance.evidence or ""], made_at=it.created_at.timestamp())]
            if len(kept) < len(items):
                logger.warning("%s: %d item(s) quoting deleted memories left out of the export",
                               self.path, len(items) - len(kept))
            items = kept
        return [it.model_dump(mode="json") for it in items]

    def delete(self, caller: Caller, item_ids: Sequence[str]) -> int:
        """Delete items and every copy derived from them; returns how many items went.

        Derived copies — captured tool results, episode summaries and ``memory_write`` items
        that quote a deleted memory, the fact consolidated from it, and (for a fact named
        here) the episodes consolidated into it — are found
        through provenance links and by their text (:mod:`._deletion`). Each item leaves the
        base table, FTS and both vector indexes, its recall tags go, and the deletion ledger
        records its id and keyed digests of its text for later exports (:mod:`.ledger`).
        The freed pages are zeroed, the FTS segments merged and the WAL truncated, so the
        text is not left in the file's bytes either.

        All ids are checked before anything is deleted (one transaction).

        Raises:
            MemoryNotFoundError: An id does not exist (nothing is deleted).
            MemoryAccessError: The caller may not delete one of them (nothing is deleted).
        """
        rows = [self._row(caller, i, "delete") for i in dict.fromkeys(item_ids)]
        return self._delete_rows([(int(r[0]), str(r[1]), str(r[2])) for r in rows], derived=True)

    def delete_all(self, caller: Caller) -> int:
        """Delete every item the caller owns (the right to be forgotten)."""
        owner = self._owner_for(caller, "delete")
        rows = self._db.query("SELECT rid, id, owner FROM items WHERE owner = ?", (owner,))
        return self._delete_rows([(int(r), str(i), str(o)) for r, i, o in rows], derived=False)

    def _delete_rows(self, rows: list[Row], *, derived: bool) -> int:
        if not rows:
            return 0
        deleted = delete_rows(self._db, self._vectors, self._access.ledger_key(), rows, derived=derived)
        logger.info("%s: deleted %d memories", self.path, len(deleted))
        return len(deleted)

    def deletion_ledger(self, caller: Caller) -> DeletionLedger:
        """The deletion ledger of the caller's memories (an admin without ``acting_for``: every owner).

        Exporters check their output against it (:meth:`.ledger.DeletionLedger.quotes`); it
        holds ids, times and keyed digests, never deleted text.
        """
        if caller.subject is None and not self.shared:
            self._access.check(caller, "export", None)
            return self._ledger(None)
        return self._ledger(self._owner_for(caller, "read"))

    def _ledger(self, owner: str | None) -> DeletionLedger:
        return load_ledger(self._db, self._access.ledger_key(), owner)

    def deleted_ids(self, caller: Caller) -> set[str]:
        """Ids the caller's memories had before deletion (trace exports must omit them)."""
        if caller.subject is None and not self.shared:
            self._access.check(caller, "export", None)
            return {str(r) for (r,) in self._db.query("SELECT id FROM deleted")}
        owner = self._owner_for(caller, "read")
        return {str(r) for (r,) in self._db.query("SELECT id FROM deleted WHERE owner = ?", (owner,))}

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check`` (``ok`` when healthy)."""
        return self._db.integrity_check()


def _fact(row: Any) -> ExistingFact:
    return ExistingFact(
        id=str(row[0]), content_hash=str(row[1]), trust=float(row[2]),
        observed_at=datetime.fromtimestamp(float(row[3]), tz=UTC),
    )


def _filter_sql(
    owner: str, tiers: Sequence[str], statuses: Sequence[str], filters: SearchFilters
) -> tuple[str, list[Any]]:
    # The unary + keeps SQLite from answering "rid IN (...) AND owner = ?" through the owner
    # index (one probe per tier x status x rid); by primary key it is one probe per rid.
    where = (
        f"+i.owner = ? AND i.tier IN ({','.join('?' * len(tiers))}) "
        f"AND i.status IN ({','.join('?' * len(statuses))})"
    )
    params: list[Any] = [owner, *tiers, *statuses]
    if filters.category:
        where += " AND i.category = ?"
        params.append(filters.category)
    if filters.since:
        where += " AND i.observed_at >= ?"
        params.append(epoch(filters.since))
    if filters.until:
        where += " AND i.observed_at <= ?"
        params.append(epoch(filters.until))
    return where, params
