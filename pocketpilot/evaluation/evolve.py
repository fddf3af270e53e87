"""``pocketpilot evolve``: the harness learns from its own verified runs, judged on held-out evolve tasks.

One iteration (the report's "AI for Harness" stage):

1. run a dev sample under the current η (harness mode, the bench's own run);
2. distil experience from the verified successes (a :class:`Distiller`): the dev sample's, and
   the previous iteration's evolve runs' (its baseline, and the accepted candidates' runs once
   approved; never a test-split run); with ``experience_pool`` on, every earlier iteration's too,
   less the entries an accepted eviction removed; diagnose the dev failures;
3. propose candidate revisions of η (a :class:`Proposer`);
4. run the evolve sample under the current η; attribute harm to the experience entries shown
   in the tasks it fails (:mod:`.evolve_harm`: an entry shown in tasks that failed with it and
   passed without it), an entry harmful enough becoming an eviction candidate; measure each
   candidate, then the set of the ones that helped, on the evolve sample against the current
   η, paired task by task, and apply the acceptance rule (:func:`accepts`);
5. write the accepted ones as one pending η revision, the evidence in its rationale and in the
   iteration's ``decision.json``;
6. once it is approved (``pocketpilot adapter approve OUT/eta.json ID``, or ``--auto-approve``),
   start the next iteration under the new η.

**Acceptance rule.** A configuration is accepted against the current η when, on the same evolve
tasks, the tasks it newly passes minus the tasks it newly fails is at least
:data:`MIN_GAIN` (two), and no group has more than :data:`MAX_GROUP_LOSS` (one) task that
passed under the current η and fails under it. A single candidate goes on to the set when it
gains at least one task net and breaks the group rule nowhere; the set is accepted when it
meets the rule, else the best single candidate that meets it on its own, else nothing.

The loop reads only the dev and evolve splits: tasks are loaded through the folder's split
index (:mod:`pocketpilot.tasks.split_index`), so no test-split file is ever opened. Its state
lives in the output folder (:mod:`.evolve_state`): a killed run resumes at the episode it
stopped at, on this machine or another.

Proposers and distillers are small protocols so new sources of candidates (tool text from
errors, experience libraries) plug in without touching the loop.

**Decode memo.** Every planner runs through a :class:`~pocketpilot.harness.planners.decode_memo.MemoPlanner`
over ``OUT/decode-memo.jsonl`` (unless ``decode_memo=False``): a candidate changes the prompts of
only the steps it reaches, so its rerun of the evolve sample decodes those and is served the
baseline's greedy output everywhere else (and a resumed run keeps what was decoded). It
memoizes only greedy decodes of a planner that vouches for them; a served step says so in its
trace (``PlannerTurn.memo``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..adapters import Eta, EtaError, Revision, RevisionError, RevisionStore, apply_revision, load_eta, save_eta
from ..contracts import Episode
from ..errors import UsageError
from ..harness import Planner
from ..harness.planners.decode_memo import DecodeMemo, MemoPlanner
from ..memory import Embedder
from ..tasks import TaskSpec
from ..tasks.split_index import load_split_tasks
from ..tracing.trace import read_trace
from .compare import TaskOutcome, run_task
from .evolve_harm import accumulate, attribute, evictions, failed_and_shown
from .evolve_state import (
    Candidate,
    Decision,
    EvolveSettings,
    EvolveStateError,
    Harm,
    IterationStart,
    Paired,
    Proposals,
    Review,
    StateFolder,
)
from .folder_lock import FolderLock
from .task_episode import HarnessKit

__all__ = [
    "AUTO_APPROVER",
    "MEMO_FILE",
    "MAX_GROUP_LOSS",
    "MIN_GAIN",
    "CandidateProposer",
    "Distiller",
    "EvolveLoop",
    "EvolveResult",
    "ExperienceDistiller",
    "NoDistiller",
    "PlannerFactory",
    "Proposer",
    "accepts",
    "experience_size",
    "stratified_sample",
    "with_world_tools",
]

logger = logging.getLogger(__name__)

MIN_GAIN = 2
"""Net evolve tasks a configuration must gain over the current η to be accepted."""
MAX_GROUP_LOSS = 1
"""Most tasks of any one group an accepted configuration may lose (pass before, fail after)."""
AUTO_APPROVER = "pocketpilot evolve --auto-approve"
MEMO_FILE = "decode-memo.jsonl"
"""The decode memo in the output folder (see the module docstring)."""

PlannerFactory = Callable[[TaskSpec, Eta], Planner]
"""A planner for one task under one η (the CLI returns its one loaded model every time)."""


class Proposer(Protocol):
    """Turns failed dev episodes (and the experience distilled from the successes) into candidate revisions."""

    def propose(self, failures: Sequence[Episode], eta: Eta,
                experience: Sequence[Any]) -> tuple[list[Candidate], list[str]]:
        """Candidates against ``eta``, and a line per finding that gave none (for the report)."""
        ...


class Distiller(Protocol):
    """Turns successful dev episodes into experience entries (η's worked examples)."""

    def distil(self, successes: Sequence[Episode], eta: Eta) -> list[Any]:
        """The entries distilled (near-duplicates merged)."""
        ...


class NoDistiller:
    """Distils nothing (a loop run on revisions alone)."""

    def distil(self, successes: Sequence[Episode], eta: Eta) -> list[Any]:
        """No entries."""
        return []


class ExperienceDistiller:
    """Workflows from the verified successes (:func:`pocketpilot.trainer_bridge.distil.distil`): bench runs
    on dev, so no owner data is involved.
    """

    def distil(self, successes: Sequence[Episode], eta: Eta) -> list[Any]:
        """Entries from the episodes that passed their verifier."""
        from ..trainer_bridge.distil import distil

        return distil(successes)


class CandidateProposer:
    """Every typed candidate the evidence supports (:func:`pocketpilot.trainer_bridge.candidates.generate_candidates`):
    the experience library's new entries, tool text from argument errors, exposure and memory
    notes from harness-side findings.

    Args:
        min_support: failed episodes a finding needs before it becomes a candidate.
        ablation: policy name → tasks it costs on dev (the ``ablation`` of ``bench/bench_ablation.py``):
            a policy that costs enough becomes a candidate to leave out, measured on evolve like any other.
    """

    def __init__(self, min_support: int = 2, ablation: Mapping[str, int] | None = None) -> None:
        self.min_support = min_support
        self.ablation = dict(ablation or {})

    def propose(self, failures: Sequence[Episode], eta: Eta,
                experience: Sequence[Any]) -> tuple[list[Candidate], list[str]]:
        """Diagnose ``failures``; candidates from their findings and from ``experience``."""
        from ..trainer_bridge.candidates import generate_candidates
        from ..trainer_bridge.diagnosis import _catalogue, diagnose_many

        # every tool a run could have had: the sandbox's, plus the worlds the tasks brought
        known = sorted(_catalogue() | {t.name for ep in failures for t in ep.header.tools} | set(eta.tools))
        diagnoses = [d for d in diagnose_many(failures, known_tools=known) if d.failed]
        made = generate_candidates(diagnoses, eta, experience=experience, episodes=failures,
                                   min_support=self.min_support, ablation=self.ablation)
        candidates = [Candidate(kind=c.kind, revision=c.revision, summary=c.revision.rationale[:200],
                                evidence=c.evidence) for c in made]
        skipped = [] if made else [f"{len(diagnoses)} failed episode(s) and {len(experience)} experience "
                                   "entr(ies) gave no candidate"]
        return candidates, skipped


def with_world_tools(eta: Eta, tasks: Sequence[TaskSpec]) -> Eta:
    """``eta`` with an entry for every tool the tasks' own worlds expose that η lacks.

    η compiled for the sandbox knows nothing of a team's tools, and a revision or experience
    entry may speak only of tools η knows: without their entries, nothing learned on the
    team's world could ever be accepted. A name η already holds keeps its entry (a team tool
    that overrides a sandbox namesake is not described twice). The entries carry the tools'
    declarations only, no skills.
    """
    from ..adapters.eta import ToolEntry
    from ..tasks import prepare

    tools = dict(eta.tools)
    for task in tasks:
        if task.world is None:
            continue
        run = prepare(task)
        try:
            for spec in run.executor.tools():
                if spec.name not in tools:
                    tools[spec.name] = ToolEntry(description=spec.description, parameters=spec.parameters,
                                                 destructive=spec.destructive, semantics=spec.semantics(),
                                                 world=spec.world)
        finally:
            run.close()
    return eta if tools == eta.tools else eta.model_copy(update={"tools": tools})


def experience_size(eta: Eta) -> int:
    """Entries in η's experience library (0 for an η without one)."""
    return len(getattr(eta, "experience", None) or ())


def accepts(paired: Paired) -> bool:
    """The acceptance rule (module docstring): a net gain of at least :data:`MIN_GAIN` evolve
    tasks, and no group losing more than :data:`MAX_GROUP_LOSS`.
    """
    return paired.net >= MIN_GAIN and max(paired.losses_by_group().values(), default=0) <= MAX_GROUP_LOSS


def _helps(paired: Paired) -> bool:
    """A single candidate worth trying in the set: it gains net and breaks the group rule nowhere."""
    return paired.net >= 1 and max(paired.losses_by_group().values(), default=0) <= MAX_GROUP_LOSS


def stratified_sample(tasks: Sequence[TaskSpec], n: int, key: str) -> list[TaskSpec]:
    """``n`` tasks spread over the groups (round-robin over groups, each shuffled by ``key``).

    Deterministic for a key, so a resumed run draws the same sample; the whole list when
    ``n`` covers it.
    """
    by_group: dict[str, list[TaskSpec]] = {}
    for t in sorted(tasks, key=lambda t: t.id):
        by_group.setdefault(t.group, []).append(t)
    for name, items in by_group.items():
        random.Random(f"{key}:{name}").shuffle(items)
    out: list[TaskSpec] = []
    columns = [by_group[g] for g in sorted(by_group)]
    depth = 0
    while len(out) < n and any(depth < len(c) for c in columns):
        out.extend(c[depth] for c in columns if depth < len(c))
        depth += 1
    return sorted(out[:n], key=lambda t: t.id)


@dataclass
class EvolveResult:
    """What a call of :meth:`EvolveLoop.run` left: the iterations done and what it waits for."""

    iterations_done: int
    waiting_for: str | None = None
    """A pending revision id awaiting approval (the next iteration starts once it is approved)."""
    accepted: list[str] = field(default_factory=list)


class EvolveLoop:
    """The co-evolution loop over one task folder, its state in one output folder.

    Args:
        out: the output folder (created; resumed when it holds an earlier run's state).
        settings: the task folder, sample sizes, seed and candidate cap (fixed for the folder).
        planner_factory: a planner per (task, η).
        base_eta: η of the first iteration, used only when the folder has none yet.
        library: the skill library η was compiled from (HarnessKit's).
        proposer: failures (+ experience) → candidates (default :class:`CandidateProposer`).
        distiller: successes → experience entries (default :class:`ExperienceDistiller`).
        embedder: vector backend of the tasks' memory stores (None: keyword-only).
        auto_approve: approve the accepted revision at once (benches); else wait for a reviewer.
        on_event: called with a line per finished episode and step (the CLI prints them).
        decode_memo: serve decodes a run already made from ``OUT/decode-memo.jsonl`` (module docstring).

    Raises:
        DecodeMemoError: the memo file holds a complete line that does not parse.
    """

    def __init__(
        self,
        out: str | Path,
        settings: EvolveSettings,
        planner_factory: PlannerFactory,
        *,
        base_eta: Eta,
        library: Any | None = None,
        proposer: Proposer | None = None,
        distiller: Distiller | None = None,
        embedder: Embedder | None = None,
        auto_approve: bool = False,
        on_event: Callable[[str], None] | None = None,
        decode_memo: bool = True,
    ) -> None:
        self.state = StateFolder(out)
        self.settings = settings
        self.on_event = on_event or (lambda line: None)
        self._tasks: dict[str, list[TaskSpec]] | None = None
        self.tasks()  # bad input fails before the folder is touched
        self.memo = DecodeMemo(self.state.root / MEMO_FILE) if decode_memo else None
        self.lock = FolderLock(self.state.root, on_takeover=lambda pid: self.on_event(
            f"warning: taking over {self.state.root}'s lock from pid {pid}, which ended without releasing it"))
        self.planner_factory = planner_factory
        self.library = library
        self.proposer = proposer or CandidateProposer()
        self.distiller = distiller or ExperienceDistiller()
        self.embedder = embedder
        self.auto_approve = auto_approve
        self.store = RevisionStore(self.state.eta_path)
        with self.lock:  # another run on the folder is refused before anything is written
            self.state.settings(settings)
            if not self.state.eta_path.exists():
                tasks = self.tasks()
                save_eta(with_world_tools(base_eta, [*tasks["dev"], *tasks["evolve"]]), self.state.eta_path)
            if self.memo is not None and not self.memo.path.exists():
                self.memo.path.touch()  # the report reads the memo as on where its file is (even if nothing is stored)

    def check(self) -> None:
        """Read the current η and every state file already written, before anything runs.

        A corrupt folder then fails in a second, not after a model has loaded; nothing is rewritten.

        Raises:
            EvolveStateError: a file that does not parse.
        """
        try:
            load_eta(self.state.eta_path)
        except EtaError as exc:
            raise EvolveStateError(self.state.eta_path, str(exc)) from exc
        i = 1
        while self.state.iter_dir(i).exists():
            d = self.state.iter_dir(i)
            for name, model in (("start.json", IterationStart), ("proposals.json", Proposals),
                                ("harm.json", Harm), ("decision.json", Decision), ("review.json", Review)):
                self.state.read(d / name, model)
            if (d / "start.json").exists():
                self._start(i)  # its η snapshot and task ids too
            i += 1

    # -- inputs ---------------------------------------------------------------------------------

    def tasks(self) -> dict[str, list[TaskSpec]]:
        """The dev and evolve tasks of the folder (the test split is never opened).

        Raises:
            UsageError: an empty dev split, or no evolve split.
        """
        if self._tasks is None:
            folder = self.settings.tasks_dir
            loaded = load_split_tasks(folder, ("dev", "evolve"))
            if not loaded["dev"]:
                raise UsageError(f"{folder}: the dev split is empty; evolve needs dev tasks to learn from")
            if not loaded["evolve"]:
                raise UsageError(f"{folder}: no evolve split; evolve measures every candidate on evolve tasks")
            self._tasks = loaded
        return self._tasks

    def _kit(self, eta: Eta) -> HarnessKit:
        return HarnessKit(self.library, eta=eta)

    # -- the loop -------------------------------------------------------------------------------

    async def run(self, iterations: int) -> EvolveResult:
        """Run (or resume) iterations 1..``iterations``; stop early at a revision awaiting approval.

        Holds the folder's lock throughout (and writes ``report.md`` before giving it up).

        Raises:
            FolderLockedError: another process is running on the folder.
        """
        with self.lock:
            self.check()
            accepted: list[str] = []
            for i in range(1, iterations + 1):
                review = self._review(i)
                if review is None:
                    decision = await self._iteration(i)
                    accepted += decision.accepted
                    review = self._settle(i, decision)
                    self.write_report()
                    if review is None:
                        assert decision.revision is not None
                        return EvolveResult(i - 1, waiting_for=decision.revision.id, accepted=accepted)
            self.write_report()
            return EvolveResult(iterations, accepted=accepted)

    def report_table(self) -> str:
        """The report: the per-iteration table and what the decode memo saved (see :mod:`.evolve_report`),
        from the folder's files.
        """
        from .evolve_report import report_markdown

        return report_markdown(self.state)

    def write_report(self) -> str:
        """Write ``OUT/report.md`` (atomically, under the folder's lock) and return it."""
        table = self.report_table()
        with self.lock:
            self.state.write_text(self.state.root / "report.md", table + "\n")
        return table

    def _review(self, i: int) -> Review | None:
        """The iteration's settled review, if it has one (a pending approval is settled here once given)."""
        d = self.state.iter_dir(i)
        review = self.state.read(d / "review.json", Review)
        if review is not None:
            return review
        decision = self.state.read(d / "decision.json", Decision)
        return self._settle(i, decision) if decision is not None else None

    def _settle(self, i: int, decision: Decision) -> Review | None:
        """Record what became of the iteration's revision; None while it awaits approval."""
        d = self.state.iter_dir(i)
        rev = decision.revision
        if rev is None:
            review = Review(status="none")
        else:
            approved = self.store.root / "approved" / f"{rev.id}.json"
            pending = self.store.root / "pending" / f"{rev.id}.json"
            if not approved.exists() and not pending.exists():
                proposed = d / "proposed.marker"
                if proposed.exists():  # proposed once, and since removed by a reviewer: rejected
                    review = Review(status="rejected", revision_id=rev.id)
                    self.state.write(d / "review.json", review)
                    return review
                self.store.propose(rev)
                proposed.write_text(rev.id + "\n", encoding="utf-8")
                self.on_event(f"pending revision {rev.id}: {rev.rationale[:160]}")
            if not approved.exists() and self.auto_approve:
                self.store.approve(rev.id, AUTO_APPROVER)
            if not approved.exists():
                return None
            try:
                record = json.loads(approved.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise EvolveStateError(approved, f"not a readable approval record: {exc}") from exc
            review = Review(status="approved", revision_id=rev.id, new_version=record.get("new_version"),
                            approved_by=record.get("approved_by"))
        self.state.write(d / "review.json", review)
        return review

    async def _iteration(self, i: int) -> Decision:
        d = self.state.iter_dir(i)
        start, eta = self._start(i)
        tasks = self.tasks()
        by_id = {t.id: t for t in [*tasks["dev"], *tasks["evolve"]]}
        dev = [by_id[t] for t in start.dev]
        evolve = [by_id[t] for t in start.evolve]
        self.on_event(f"iteration {i}: η {eta.version}, {len(dev)} dev and {len(evolve)} evolve task(s)")
        dev_out = await self._run_set(dev, eta, d / "dev", f"{i} dev")
        proposals = self.state.read(d / "proposals.json", Proposals)
        if proposals is None:
            proposals = self._propose(i, dev_out, eta)
            self.state.write(d / "proposals.json", proposals)
        decision = self.state.read(d / "decision.json", Decision)
        if decision is None:
            decision = await self._measure(i, eta, evolve, proposals)
            self.state.write(d / "decision.json", decision)
        return decision

    def _start(self, i: int) -> tuple[IterationStart, Eta]:
        d = self.state.iter_dir(i)
        start = self.state.read(d / "start.json", IterationStart)
        if start is not None:
            try:
                eta = load_eta(d / "eta.json")
            except EtaError as exc:
                raise EvolveStateError(d / "eta.json", str(exc)) from exc
            if eta.version != start.eta_version:
                raise EvolveStateError(d / "eta.json", f"is η {eta.version}, start.json says {start.eta_version}")
            known = {t.id for ts in self.tasks().values() for t in ts}
            missing = [t for t in [*start.dev, *start.evolve] if t not in known]
            if missing:
                raise EvolveStateError(d / "start.json", f"names tasks the folder no longer has: {', '.join(missing[:3])}")
            return start, eta
        eta = load_eta(self.state.eta_path)
        tasks = self.tasks()
        key = f"{self.settings.seed}:{i}"
        start = IterationStart(
            iteration=i,
            eta_version=eta.version,
            dev=[t.id for t in stratified_sample(tasks["dev"], self.settings.dev_sample, f"{key}:dev")],
            evolve=[t.id for t in stratified_sample(tasks["evolve"], self.settings.evolve_sample, f"{key}:evolve")],
        )
        save_eta(eta, d / "eta.json")
        self.state.write(d / "start.json", start)
        return start, eta

    async def _run_set(self, tasks: Sequence[TaskSpec], eta: Eta, folder: Path, label: str,
                       settled: Callable[[dict[str, TaskOutcome]], bool] | None = None) -> dict[str, TaskOutcome]:
        """The tasks under ``eta`` in order, resuming from the folder's outcome log; outcomes by task id.

        ``settled`` is asked before each task: once the outcomes so far decide the question the
        run answers, the rest are not run (a resumed run stops at the same task).
        """
        log = self.state.outcomes(folder)
        digests = {t.id: t.digest() for t in tasks}  # a task edited since it ran runs again
        done = {k: o for k, o in self.state.outcome_map(folder).items()
                if k in digests and o.task_digest in ("", digests[k])}
        kit = self._kit(eta)
        out: dict[str, TaskOutcome] = {}
        memo_before = self.memo.stats.copy() if self.memo is not None else None
        for n, task in enumerate(tasks, 1):
            if settled is not None and settled(out):
                self.on_event(f"[{label}] settled after {len(out)} of {len(tasks)} task(s): the rest cannot "
                              "change the decision")
                break
            if task.id in done:
                out[task.id] = done[task.id]
                continue
            planner = self.planner_factory(task, eta)
            if self.memo is not None:
                planner = MemoPlanner(planner, self.memo)
            _, outcome = await run_task(task, planner, mode="harness", trace_dir=folder / "traces",
                                        embedder=self.embedder, kit=kit)
            if outcome.trace:  # relative to the output folder: the folder resumes on another machine
                outcome = outcome.model_copy(update={"trace": _relative(Path(outcome.trace), self.state.root)})
            log.append(outcome)
            out[task.id] = outcome
            mark = "PASS" if outcome.success else "fail"
            self.on_event(f"[{label} {n}/{len(tasks)}] {mark} {task.id} {task.group} steps={outcome.steps} "
                          f"{outcome.wall_s:.1f}s")
        if self.memo is not None and memo_before is not None:
            ran = self.memo.stats.since(memo_before)
            if ran.hits or ran.misses:
                self.on_event(f"[{label}] {ran.line()}")
        return out

    def _episodes(self, outcomes: dict[str, TaskOutcome]) -> list[Episode]:
        episodes = []
        for o in outcomes.values():
            if not o.trace:
                continue
            path = self.state.root / o.trace
            if not path.exists():
                path = Path(o.trace)
            episodes.append(read_trace(path)[0])
        return episodes

    def _evolve_successes(self, i: int) -> list[Episode]:
        """Verified successes of iteration ``i``'s evolve runs: its baseline's, and the runs of what it
        accepted once approved (a rejected revision's runs are not learned from). Never a test-split run:
        only the folders this loop wrote for the evolve sample are read.
        """
        d = self.state.iter_dir(i)
        decision = self.state.read(d / "decision.json", Decision)
        review = self.state.read(d / "review.json", Review)
        labels = ["base"]
        if decision is not None and decision.accepted and review is not None and review.status == "approved":
            labels += [*decision.accepted, *(["set"] if len(decision.accepted) > 1 else [])]
        out: list[Episode] = []
        for label in labels:
            runs = self.state.outcome_map(d / "evolve" / label)
            out += [e for e in self._episodes({t: o for t, o in runs.items() if o.success})
                    if e.verdict is not None and e.verdict.success]
        return out

    def _dev_successes(self, i: int) -> list[Episode]:
        """Verified successes of iteration ``i``'s dev sample, read back from its outcome log and traces."""
        runs = self.state.outcome_map(self.state.iter_dir(i) / "dev")
        return [e for e in self._episodes({t: o for t, o in runs.items() if o.success})
                if e.verdict is not None and e.verdict.success]

    def _evicted(self, i: int) -> set[str]:
        """Ids of the experience entries whose eviction an iteration before ``i`` accepted.

        An entry measured harmful stays out of the pool, even though its source runs are still
        verified successes that would distil it again.
        """
        from ..adapters.revision import EvictExperience

        out: set[str] = set()
        for j in range(1, i):
            d = self.state.iter_dir(j)
            decision = self.state.read(d / "decision.json", Decision)
            if decision is None or not decision.accepted:
                continue
            proposals = self.state.read(d / "proposals.json", Proposals)
            harm = self.state.read(d / "harm.json", Harm)
            for c in [*(proposals.candidates if proposals else []), *(harm.candidates if harm else [])]:
                if c.id in decision.accepted:
                    out |= {op.entry_id for op in c.revision.ops if isinstance(op, EvictExperience)}
        return out

    def _pooled_successes(self, i: int) -> list[Episode]:
        """With ``experience_pool`` on: the verified successes of the iterations before ``i`` that
        :meth:`_propose` does not read already (every earlier dev sample, the evolve runs before the
        previous iteration's). Only the folders this loop wrote for dev and evolve are read.
        """
        if not self.settings.experience_pool or i <= 1:
            return []
        return [*(e for j in range(1, i) for e in self._dev_successes(j)),
                *(e for j in range(1, i - 1) for e in self._evolve_successes(j))]

    def _propose(self, i: int, dev_out: dict[str, TaskOutcome], eta: Eta) -> Proposals:
        episodes = self._episodes(dev_out)
        ok = {tid for tid, o in dev_out.items() if o.success}
        successes = [e for e in episodes if e.header.task_id in ok]
        failures = [e for e in episodes if e.header.task_id not in ok]
        evolve_ok = self._evolve_successes(i - 1) if i > 1 else []
        pooled = self._pooled_successes(i)
        entries = self.distiller.distil([*successes, *evolve_ok, *pooled], eta)
        evicted = self._evicted(i) if pooled else set()
        left_out = sorted({e.id for e in entries if getattr(e, "id", None) in evicted})
        entries = [e for e in entries if getattr(e, "id", None) not in evicted]
        candidates, skipped = self.proposer.propose(failures, eta, entries)
        # the candidates with the most evidence first; the rest wait for a later iteration
        candidates.sort(key=lambda c: (-len(c.evidence), c.id))
        keep = candidates[: self.settings.max_candidates]
        pool_note = f", {len(pooled)} earlier success(es) from the pool" if pooled else ""
        self.on_event(f"proposed {len(candidates)} candidate(s) from {len(successes)} dev and {len(evolve_ok)} "
                      f"evolve success(es){pool_note} and {len(failures)} failure(s); measuring {len(keep)}")
        return Proposals(candidates=keep, unmeasured=[c.id for c in candidates[len(keep):]], skipped=skipped,
                         dev_successes=len(successes), dev_failures=len(failures), experience_entries=len(entries),
                         evolve_successes=len(evolve_ok), pooled_successes=len(pooled), pool_evicted=left_out)

    async def _attribute(self, i: int, eta: Eta, evolve: Sequence[TaskSpec], base: dict[str, TaskOutcome]) -> Harm:
        """Harm of the current η's experience entries, from the evolve baseline (rule: :mod:`.evolve_harm`)."""
        present = [e.id for e in eta.experience]
        passed = {t: o.success for t, o in base.items()}
        shown = failed_and_shown(passed, self._episodes(base), present) if present else {}
        method = self.settings.harm_pairing
        without: dict[str, bool] = {}
        if method == "paired" and shown:
            off = eta.model_copy(update={"experience_config": eta.experience_config.model_copy(
                update={"enabled": False})})
            runs = await self._run_set([t for t in evolve if t.id in shown], off,
                                       self.state.iter_dir(i) / "evolve" / "no-experience",
                                       f"{i} evolve without experience")
            without = {t: o.success for t, o in runs.items()}
        elif method == "previous" and shown and i > 1:
            before = self.state.outcome_map(self.state.iter_dir(i - 1) / "evolve" / "base")
            without = {t: before[t].success for t in shown if t in before}
        harmed = attribute(shown, without)
        earlier = [h for j in range(1, i) if (h := self.state.read(self.state.iter_dir(j) / "harm.json", Harm))]
        accumulated = accumulate(earlier, harmed, present)
        candidates = evictions(eta, accumulated, harmed, self.settings.evict_threshold, i)
        for entry, tasks in harmed.items():
            self.on_event(f"experience {entry}: shown in {len(tasks)} task(s) that failed with it and passed "
                          f"without ({accumulated.get(entry, 0)} in all)")
        for c in candidates:
            self.on_event(f"eviction candidate {c.id}: {c.summary}")
        return Harm(method=method, shown=shown, without=without, harmed=harmed, accumulated=accumulated,
                    candidates=candidates)

    async def _measure(self, i: int, eta: Eta, evolve: Sequence[TaskSpec], proposals: Proposals) -> Decision:
        d = self.state.iter_dir(i) / "evolve"
        groups = {t.id: t.group for t in evolve}
        base = await self._run_set(evolve, eta, d / "base", f"{i} evolve base")
        harm = self.state.read(self.state.iter_dir(i) / "harm.json", Harm)
        if harm is None:
            harm = await self._attribute(i, eta, evolve, base)
            self.state.write(self.state.iter_dir(i) / "harm.json", harm)
        candidates = [*proposals.candidates, *harm.candidates]
        before = {t: o.success for t, o in base.items()}
        # the tasks the current η fails first: a configuration that gains none of them can never
        # gain net, and its measurement stops there (see _settled)
        evolve = sorted(evolve, key=lambda t: (before[t.id], t.id))
        measured: dict[str, Paired] = {}
        helpful: list[Candidate] = []
        for c in candidates:
            try:
                after_eta = apply_revision(eta, c.revision)
            except RevisionError as exc:
                self.on_event(f"candidate {c.id} no longer applies: {exc.reason}")
                continue
            runs = await self._run_set(evolve, after_eta, d / c.id, f"{i} evolve {c.id}",
                                       settled=_settled(before, groups, 1))
            paired = Paired(label=c.id, groups=groups, before=before, after={t: o.success for t, o in runs.items()})
            measured[c.id] = paired
            self.on_event(f"candidate {c.id}: +{len(paired.gained)} -{len(paired.lost)} (net {paired.net:+d})")
            if _helps(paired):
                helpful.append(c)
        accepted: list[Candidate] = []
        reason = ("no candidate gained a task without breaking the group rule" if candidates
                  else "nothing was proposed")
        if len(helpful) >= 2:
            combined, members = _combine(eta, helpful, f"evolve-{i:02d}-set")
            if len(members) >= 2:
                runs = await self._run_set(evolve, apply_revision(eta, combined), d / "set", f"{i} evolve set",
                                           settled=_settled(before, groups, MIN_GAIN))
                measured["set"] = Paired(label="set", groups=groups, before=before,
                                         after={t: o.success for t, o in runs.items()})
                if accepts(measured["set"]):
                    accepted, reason = members, "the set meets the rule"
        if not accepted:
            singles = sorted((c for c in helpful if accepts(measured[c.id])),
                             key=lambda c: (-measured[c.id].net, len(measured[c.id].lost), c.id))
            if singles:
                accepted, reason = singles[:1], "the best single candidate meets the rule"
            elif helpful:
                reason = "no candidate, nor their set, meets the rule"
        revision = self._revision(i, eta, accepted, measured, reason) if accepted else None
        self.on_event(f"iteration {i}: accepted {[c.id for c in accepted] or 'nothing'} ({reason})")
        return Decision(measured=measured, accepted=[c.id for c in accepted], reason=reason, revision=revision)

    def _revision(self, i: int, eta: Eta, accepted: list[Candidate], measured: dict[str, Paired],
                  reason: str) -> Revision:
        combined, _ = _combine(eta, accepted, "x")
        key = "set" if len(accepted) > 1 else accepted[0].id
        paired = measured[key]
        losses = paired.losses_by_group()
        digest = hashlib.sha256(f"{eta.version}|{[c.id for c in accepted]}".encode()).hexdigest()[:8]
        rationale = (
            f"pocketpilot evolve iteration {i}: {', '.join(c.id for c in accepted)}. On {len(paired.after)} evolve "
            f"tasks against η {eta.version}: +{len(paired.gained)} -{len(paired.lost)} (net {paired.net:+d}); "
            f"losses by group {losses or 'none'}; rule: net >= {MIN_GAIN}, no group losing more than "
            f"{MAX_GROUP_LOSS} ({reason}). Evidence: iter-{i:02d}/decision.json and iter-{i:02d}/evolve/."
        )
        return Revision(id=f"evolve-{i:02d}-{digest}", base_version=eta.version, rationale=rationale[:1000],
                        ops=combined.ops, source="evolve")


def _settled(before: dict[str, bool], groups: dict[str, str], need: int) -> Callable[[dict[str, TaskOutcome]], bool]:
    """Whether the outcomes so far already prove a configuration cannot reach a net gain of ``need``
    with no group losing more than :data:`MAX_GROUP_LOSS`, whatever the tasks not yet run do.

    Exact, never a guess: the best the rest can do is pass every task the current η fails and
    lose nothing. A configuration so settled is refused as it would be after a full run.
    """

    def settled(out: dict[str, TaskOutcome]) -> bool:
        lost: dict[str, int] = {}
        net = 0
        for t, o in out.items():
            if o.success and not before[t]:
                net += 1
            elif before[t] and not o.success:
                net -= 1
                lost[groups[t]] = lost.get(groups[t], 0) + 1
        if max(lost.values(), default=0) > MAX_GROUP_LOSS:
            return True
        open_gains = sum(1 for t, ok in before.items() if not ok and t not in out)
        return net + open_gains < need

    return settled


def _combine(eta: Eta, candidates: Sequence[Candidate], rev_id: str) -> tuple[Revision, list[Candidate]]:
    """One revision of the candidates' ops, in order; a candidate that conflicts with those before it is left out."""
    ops: list[Any] = []
    members: list[Candidate] = []
    for c in candidates:
        trial = Revision(id=rev_id, base_version=eta.version, rationale="set", ops=[*ops, *c.revision.ops])
        try:
            apply_revision(eta, trial)
        except RevisionError:
            continue
        ops, members = list(trial.ops), [*members, c]
    if not members:
        raise RevisionError(rev_id, "none of the candidates applies to η " + eta.version)
    return Revision(id=rev_id, base_version=eta.version, rationale="set", ops=ops), members


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
