"""The per-iteration table of ``pocketpilot evolve`` (the report's Figure 6), read from the state folder.

One row per iteration: the η it ran under; dev pass rates by group under that η; evolve pass
rates by group under that η and under what was accepted (the same tasks, paired); the
candidates proposed, measured and accepted; what the reviewer did; the experience library's
size before and after; and where the time went (summed episode wall time per phase).

Below it, what the decode memo saved: for each iteration and each of its run sets (the dev
sample, the evolve baseline, the no-experience reruns of the harm attribution, each
candidate's measurement, the set), the planner steps of the recorded episodes served from the
memo and those decoded, and the totals. Counted from the run sets' traces (a served step
carries ``memo: true``), not from a process's counters, so a folder written by an older
version, or by a run killed and resumed, counts the same.

Built from the files alone, so a resumed or finished run reports the same table, and
:func:`render_report` writes it again from a folder without running anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..adapters import EtaError, apply_revision, load_eta
from ..contracts import Step
from ..errors import TraceError, UsageError
from ..tracing.trace import read_trace
from .compare import TaskOutcome
from .evolve import MEMO_FILE, experience_size
from .evolve_state import Decision, Harm, IterationStart, Proposals, Review, StateFolder

__all__ = ["IterationRow", "MemoCount", "iteration_rows", "markdown_table", "memo_count", "memo_table", "render_report",
           "report_markdown"]

REPORT_FILE = "report.md"


@dataclass
class MemoCount:
    """Planner steps of one run set's recorded episodes: served from the decode memo, or decoded."""

    episodes: int = 0
    served: int = 0
    decoded: int = 0
    untraced: int = 0
    """Episodes whose trace file is missing or unreadable (their steps are not counted)."""

    @property
    def steps(self) -> int:
        """Planner steps in all."""
        return self.served + self.decoded

    def add(self, other: MemoCount) -> None:
        """Add ``other``'s counts to these."""
        self.episodes += other.episodes
        self.served += other.served
        self.decoded += other.decoded
        self.untraced += other.untraced


class IterationRow:
    """The figures of one iteration (absent ones are None: the step has not run yet)."""

    def __init__(self, iteration: int, eta_version: str) -> None:
        self.iteration = iteration
        self.eta_version = eta_version
        self.dev: list[TaskOutcome] = []
        self.evolve_before: list[TaskOutcome] = []
        self.evolve_after: list[TaskOutcome] | None = None
        self.proposals: Proposals | None = None
        self.harm: Harm | None = None
        self.decision: Decision | None = None
        self.review: Review | None = None
        self.experience_before = 0
        self.experience_after: int | None = None
        self.seconds: dict[str, float] = {}
        self.memo: list[tuple[str, MemoCount]] = []
        """(run set, its planner steps served and decoded), in the order the iteration ran them."""


def _rate(items: Iterable[TaskOutcome], group: str | None = None) -> str:
    chosen = [o for o in items if group is None or o.group == group]
    if not chosen:
        return "-"
    passed = sum(o.success for o in chosen)
    return f"{100 * passed / len(chosen):.0f}% ({passed}/{len(chosen)})"


def iteration_rows(state: StateFolder) -> list[IterationRow]:
    """Every iteration the folder has started, in order."""
    rows = []
    i = 1
    while (state.iter_dir(i) / "start.json").exists():
        d = state.iter_dir(i)
        start = state.read(d / "start.json", IterationStart)
        assert start is not None
        row = IterationRow(i, start.eta_version)
        try:
            eta = load_eta(d / "eta.json")
        except EtaError:
            eta = None
        row.experience_before = experience_size(eta) if eta is not None else 0
        row.dev = list(state.outcome_map(d / "dev").values())
        row.evolve_before = list(state.outcome_map(d / "evolve" / "base").values())
        row.proposals = state.read(d / "proposals.json", Proposals)
        row.harm = state.read(d / "harm.json", Harm)
        row.decision = state.read(d / "decision.json", Decision)
        row.review = state.read(d / "review.json", Review)
        measured = sorted((d / "evolve").iterdir()) if (d / "evolve").is_dir() else []
        row.seconds = {"dev": sum(o.wall_s for o in row.dev),
                       "base": sum(o.wall_s for o in row.evolve_before),
                       "candidates": sum(o.wall_s for m in measured if m.name != "base"
                                         for o in state.outcome_map(m).values())}
        if row.decision is not None:
            accepted = row.decision.accepted
            label = "set" if len(accepted) > 1 else (accepted[0] if accepted else None)
            row.evolve_after = list(state.outcome_map(d / "evolve" / label).values()) if label else row.evolve_before
            if row.decision.revision is not None and eta is not None and row.review is not None \
                    and row.review.status == "approved":
                row.experience_after = experience_size(apply_revision(eta, row.decision.revision))
            else:
                row.experience_after = row.experience_before
        row.memo = [(label, memo_count(state, outcomes)) for label, outcomes in _run_sets(state, d, row)]
        rows.append(row)
        i += 1
    return rows


def _turns(steps: Iterable[Step]) -> Iterator[bool]:
    """For each planner turn of ``steps``, sub-agents' included: served from the memo."""
    for step in steps:
        if step.planner is not None:
            yield step.planner.memo
        for child in step.children:
            yield from _turns(child.steps)


def _trace_turns(path: Path) -> list[bool] | None:
    """Each planner turn of a trace file: served or not (None: no such file, or one the trace reader
    refuses). A torn last line (a run killed mid-write) is skipped, as the reader skips it; a
    malformed line before it, or a missing header, makes the whole trace unreadable: the episode
    counts as without a trace rather than as the steps before the damage.
    """
    try:
        episode, _complete = read_trace(path)
    except (TraceError, ValidationError):  # ValidationError: an end record whose verdict does not parse
        return None
    return list(_turns(episode.steps))


def memo_count(state: StateFolder, outcomes: Iterable[TaskOutcome]) -> MemoCount:
    """The planner steps of the recorded episodes ``outcomes``, read from their traces."""
    count = MemoCount()
    for o in outcomes:
        count.episodes += 1
        turns = _trace_turns(state.root / o.trace) if o.trace else None  # relative to the folder, or absolute
        if turns is None:
            count.untraced += 1
            continue
        count.served += sum(turns)
        count.decoded += len(turns) - sum(turns)
    return count


def _run_sets(state: StateFolder, d: Path, row: IterationRow) -> list[tuple[str, list[TaskOutcome]]]:
    """The iteration's run sets that recorded an episode, in the order the loop runs them."""
    sets: list[tuple[str, list[TaskOutcome]]] = [("dev", row.dev), ("evolve base", row.evolve_before)]
    evolve = d / "evolve"
    names = {p.name for p in evolve.iterdir() if p.is_dir()} - {"base"} if evolve.is_dir() else set()
    order = ["no-experience", *(c.id for c in (row.proposals.candidates if row.proposals else ())),
             *(c.id for c in (row.harm.candidates if row.harm else ())), "set"]
    for name in [*dict.fromkeys(n for n in order if n in names), *sorted(names - set(order))]:
        label = {"no-experience": "no experience (harm rerun)", "set": "set"}.get(name, f"candidate {name}")
        sets.append((label, list(state.outcome_map(evolve / name).values())))
    return [(label, outcomes) for label, outcomes in sets if outcomes]


def markdown_table(rows: list[IterationRow]) -> str:
    """The Figure 6 table as Markdown (an empty folder gives the header alone)."""
    groups = sorted({o.group for r in rows for o in [*r.dev, *r.evolve_before]})
    head = ["iter", "η", "dev", *[f"dev {g}" for g in groups], "evolve before", "evolve after",
            *[f"evolve {g} before→after" for g in groups], "candidates (measured/proposed)", "accepted",
            "review", "experience", "minutes dev/base/candidates"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        after = r.evolve_after
        proposed = "-"
        if r.proposals is not None:
            n = len(r.proposals.candidates) + (len(r.harm.candidates) if r.harm else 0)
            proposed = f"{n}/{n + len(r.proposals.unmeasured)}"
        accepted = ", ".join(r.decision.accepted) if r.decision and r.decision.accepted else \
            ("none" if r.decision else "-")
        review = r.review.status if r.review else ("pending" if r.decision and r.decision.revision else "-")
        exp = f"{r.experience_before}" + (f" → {r.experience_after}" if r.experience_after not in (None,
                                                                                                  r.experience_before) else "")
        cells = [
            str(r.iteration), r.eta_version[:8], _rate(r.dev), *[_rate(r.dev, g) for g in groups],
            _rate(r.evolve_before), _rate(after) if after is not None else "-",
            *[f"{_rate(r.evolve_before, g)} → {_rate(after, g) if after is not None else '-'}" for g in groups],
            proposed, accepted, review, exp,
            "/".join(f"{r.seconds.get(k, 0) / 60:.1f}" for k in ("dev", "base", "candidates")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    rule = ("Acceptance rule: on the same evolve tasks, net gain (newly passed minus newly failed) >= 2 and no "
            "group losing more than 1 task. Pass rates: % (passed/tasks) under the iteration's η (before) and "
            "under what was accepted (after). Minutes: summed episode wall time of the dev sample, the evolve sample "
            "under the current η, and every candidate's evolve measurement (with the reruns of failed tasks without "
            "experience that attribute harm; eviction candidates count among the candidates).")
    return "\n".join([*lines, "", rule])


def _memo_cells(c: MemoCount) -> list[str]:
    episodes = f"{c.episodes}" + (f" ({c.untraced} without a trace)" if c.untraced else "")
    share = f"{100 * c.served / c.steps:.0f}%" if c.steps else "-"
    return [episodes, str(c.steps), str(c.served), str(c.decoded), share]


def memo_table(state: StateFolder, rows: list[IterationRow]) -> str:
    """What the decode memo saved, per iteration and run set, as Markdown (see the module docstring).

    The memo counts as on when the folder holds its file (``OUT/decode-memo.jsonl``: a run with the
    memo on creates it, one with ``--no-decode-memo`` never does).
    """
    if (state.root / MEMO_FILE).exists():
        status = (f"Decode memo: on ({MEMO_FILE}). A served step is a greedy decode not made: its prompt was "
                  "one an earlier run on this folder had decoded.")
    else:
        status = (f"Decode memo: off (the folder has no {MEMO_FILE}: run with --no-decode-memo); every planner "
                  "step was decoded.")
    head = ["iter", "run set", "episodes", "planner steps", "served from memo", "decoded", "served"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    total = MemoCount()
    for r in rows:
        iteration = MemoCount()
        for label, count in r.memo:
            lines.append("| " + " | ".join([str(r.iteration), label, *_memo_cells(count)]) + " |")
            iteration.add(count)
        lines.append("| " + " | ".join([str(r.iteration), "**iteration**", *_memo_cells(iteration)]) + " |")
        total.add(iteration)
    lines.append("| " + " | ".join(["all", "**total**", *_memo_cells(total)]) + " |")
    note = ("Planner steps: the planner turns (sub-agents' included) in the traces of each run set's recorded "
            "episodes, the ones the pass rates above count. An episode without a trace has no trace file, or one "
            "the trace reader refuses (a damaged line before its last); its steps are not counted.")
    return "\n".join([status, "", *lines, "", note])


def report_markdown(state: StateFolder) -> str:
    """The whole ``report.md``: the Figure 6 table, then what the decode memo saved."""
    rows = iteration_rows(state)
    return "\n".join([markdown_table(rows), "", "## Decode memo", "", memo_table(state, rows)])


def render_report(out: str | Path) -> str:
    """Write ``OUT/report.md`` again from the folder's files and return it.

    Runs nothing and needs no model; writes nothing but ``report.md`` (atomically) and takes no
    lock, so it may render a folder a run is still writing (that run rewrites the file as each
    iteration ends).

    Raises:
        UsageError: ``out`` is not an evolve output folder.
        EvolveStateError: a state file that does not parse.
    """
    state = StateFolder(out)
    if not (state.root / "evolve.json").is_file():
        raise UsageError(f"{out}: not an evolve output folder (no evolve.json)")
    text = report_markdown(state)
    state.write_text(state.root / REPORT_FILE, text + "\n")
    return text
