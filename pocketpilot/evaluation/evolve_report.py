"""The per-iteration table of ``pocketpilot evolve`` (the report's Figure 6), read from the state folder.

One row per iteration: the η it ran under; dev pass rates by group under that η; evolve pass
rates by group under that η and under what was accepted (the same tasks, paired); the
candidates proposed, measured and accepted; what the reviewer did; the experience library's
size before and after; and where the time went (summed episode wall time per phase).
Built from the files alone, so a resumed or finished run reports the same table.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..adapters import EtaError, apply_revision, load_eta
from .compare import TaskOutcome
from .evolve import experience_size
from .evolve_state import Decision, Harm, IterationStart, Proposals, Review, StateFolder

__all__ = ["IterationRow", "iteration_rows", "markdown_table"]


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
        rows.append(row)
        i += 1
    return rows


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
