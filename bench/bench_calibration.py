"""The suite's calibration: the planner's bare and harness pass rates on a stratified test sample.

A template declares a difficulty (easy, medium, hard) when it is written: a guess. This run
measures it. The sample is ``--per-group`` evenly spaced test tasks of each group, taken
round-robin (``pocketpilot bench --per-group``), so a run cut short still covers every group.
Bare is the baseline, measured in the same run: each task runs bare, then with the harness.

    # run, or resume, the sample (outcomes are appended to LOG as each episode finishes)
    python bench/bench_calibration.py run [--per-group 25] [--log DIR/outcomes.jsonl] [--threads 2]

    # the tables: per group, per domain, per template (declared against measured difficulty),
    # stop reasons, and wall time (medians, and harness/bare)
    python bench/bench_calibration.py report [--log ...] [--markdown FILE]

The default log, ``bench/results/calibration/outcomes.jsonl``, is kept in the repository, so a
calibration longer than one sitting resumes where it stopped; the traces beside it are not
(the folder's .gitignore). ``bench --resume`` runs a task again if it changed since it ran, and
so does this report leave out an outcome of a task as it no longer is.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.cli.bench import select_tasks  # noqa: E402
from pocketpilot.evaluation.bench_runs import OutcomeLog, still_valid  # noqa: E402
from pocketpilot.evaluation.compare import BenchReport, SuiteReport, TaskOutcome  # noqa: E402
from pocketpilot.tasks.template import load_templates  # noqa: E402
from pocketpilot.trainer_bridge.release import difficulty_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "pocketpilot" / "tasks" / "suite"
LOG = ROOT / "bench" / "results" / "calibration" / "outcomes.jsonl"
MODES = ("bare", "harness")
LEVELS = ("easy", "medium", "hard")


def sample(per_group: int) -> list:
    """The stratified test sample, exactly as ``pocketpilot bench --split test --per-group N`` selects it."""
    return select_tasks("test", (), (), None, per_group, directory=str(SUITE))


def run(args: argparse.Namespace) -> int:
    """Run, or resume, the sample through ``pocketpilot bench --compare --resume``.

    The CLI's own run, not a copy of it, so the calibration measures what users run.

    Returns:
        The bench's exit status.
    """
    log = Path(args.log)
    cmd = [sys.executable, "-m", "pocketpilot", "bench", "--compare", "--tasks", str(SUITE), "--split", "test",
           "--per-group", str(args.per_group), "--threads", str(args.threads), "--model", args.model,
           "--trace-dir", str(log.parent), "--resume"]
    print("$", " ".join(cmd), flush=True)
    return subprocess.call(cmd)


def template_of(task_id: str, template_ids: Sequence[str]) -> str:
    """The template a generated task came from (its id is ``gen-<template>-NNNN``); ``bundled`` otherwise."""
    matches = [t for t in template_ids if task_id.startswith(f"gen-{t}-")]
    return max(matches, key=len) if matches else "bundled"


def _rate(items: Sequence[TaskOutcome]) -> str:
    return f"{sum(o.success for o in items)}/{len(items)} ({100 * sum(o.success for o in items) / len(items):.0f}%)" \
        if items else "-"


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(args: argparse.Namespace) -> int:
    """Print the calibration tables from the log (and with ``--markdown``, write them).

    Only tasks of the sample that ran in both modes count, so every comparison is paired.

    Returns:
        1 when no task of the sample ran in both modes yet, else 0.
    """
    tasks = sample(args.per_group)
    done = still_valid(OutcomeLog(Path(args.log).parent).load(), tasks, MODES)
    paired = [t for t in tasks if all((t.id, m) in done for m in MODES)]
    if not paired:
        print(f"no task of the sample has run in both modes yet ({args.log})")
        return 1
    by_mode = {m: [done[(t.id, m)] for t in paired] for m in MODES}
    info = {"log": str(args.log)}
    bench = BenchReport(planner=info, split="test", task_ids=[t.id for t in paired], kit={},
                        runs={m: SuiteReport(planner=info, outcomes=o, mode=m) for m, o in by_mode.items()})
    level_of = {t.id: t.difficulty for t in load_templates().templates}  # declared; "?" for a bundled task
    per_template: dict[str, list[str]] = defaultdict(list)
    for t in paired:
        per_template[template_of(t.id, list(level_of))].append(t.id)
    level_of["bundled"] = "?"

    out: list[str] = [
        f"# Calibration: {len(paired)} of {len(tasks)} sampled test tasks ran in both modes",
        f"(sample: {args.per_group} evenly spaced test tasks per group; log {args.log})",
        "",
        bench.markdown(),
        "",
        "## Per template: declared difficulty against the bare pass rate",
        "",
        "| template | declared | tasks | bare | measured | harness |",
        "|---|---|---|---|---|---|",
    ]
    order = (*LEVELS, "?")
    agree = 0
    for name in sorted(per_template, key=lambda n: (order.index(level_of[n]), n)):
        ids, level = per_template[name], level_of[name]
        bare = [done[(i, "bare")] for i in ids]
        measured = difficulty_of(sum(o.success for o in bare) / len(bare))
        agree += (measured == level) * len(ids)
        out.append(f"| {name} | {level} | {len(ids)} | {_rate(bare)} | {measured} | "
                   f"{_rate([done[(i, 'harness')] for i in ids])} |")
    out += ["", f"Tasks whose template's declared difficulty matches the measured bucket "
                f"(easy ≥ 80 %, hard ≤ 30 % bare): {agree}/{len(paired)}", "",
            "## Per declared difficulty", "", "| declared | tasks | bare | harness |", "|---|---|---|---|"]
    for level in order:
        ids = [i for name, items in per_template.items() if level_of[name] == level for i in items]
        if ids:
            out.append(f"| {level} | {len(ids)} | {_rate([done[(i, 'bare')] for i in ids])} | "
                       f"{_rate([done[(i, 'harness')] for i in ids])} |")
    out += ["", "## Stops and wall time", "", "| mode | stops | median wall s | mean wall s | total wall s |",
            "|---|---|---|---|---|"]
    for m in MODES:
        walls = [o.wall_s for o in by_mode[m]]
        stops = ", ".join(f"{k} {v}" for k, v in Counter(o.stop_reason for o in by_mode[m]).most_common())
        out.append(f"| {m} | {stops} | {_median(walls):.1f} | {statistics.fmean(walls):.1f} | {sum(walls):.0f} |")
    ratio = _median([o.wall_s for o in by_mode["harness"]]) / _median([o.wall_s for o in by_mode["bare"]])
    total = sum(o.wall_s for m in MODES for o in by_mode[m])
    out += ["", f"harness/bare median wall time: {ratio:.2f}x; the sample's bench wall time (both modes, "
                f"episodes only): {total / 60:.1f} min, {total / len(paired):.1f} s per task"]
    text = "\n".join(out)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n", encoding="utf-8")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the arguments and run the subcommand.

    Returns:
        The subcommand's exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "report"):
        p = sub.add_parser(name)
        p.add_argument("--per-group", type=int, default=25, help="test tasks per group (default 25: 100 tasks)")
        p.add_argument("--log", default=str(LOG), help="the outcomes log (outcomes.jsonl) to append to or read")
    sub.choices["run"].add_argument("--threads", type=int, default=2)
    sub.choices["run"].add_argument("--model", default="default")
    sub.choices["report"].add_argument("--markdown", default=None, help="also write the tables here")
    args = parser.parse_args(argv)
    return run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    sys.exit(main())
