"""Rebuild the capability comparison table from the traces of a bench run (complete or cut short).

``pocketpilot bench --compare --trace-dir DIR`` writes one trace per task and mode under
``DIR/bare`` and ``DIR/harness``. On a shared 2-core machine a full comparison with the 1.5B
planner can outlast the time available; this script turns whatever finished into the same
per-group table and JSON as the CLI, counting only tasks that finished in *both* modes so the
comparison stays paired.

Usage::

    python bench/bench_capability.py /tmp/bench/traces --out partial.json
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from pocketpilot.evaluation.compare import BenchReport, SuiteReport, TaskOutcome, load_harness_kit
from pocketpilot.tasks import load_suite
from pocketpilot.tracing.trace import read_trace

logger = logging.getLogger("bench_capability")


def _outcomes(mode_dir: Path, mode: str, tasks: dict, kit) -> dict[str, TaskOutcome]:  # type: ignore[no-untyped-def]
    out: dict[str, TaskOutcome] = {}
    for path in sorted(mode_dir.glob("*.jsonl")):
        episode, complete = read_trace(path)
        if not complete or episode.header.task_id not in tasks:
            logger.info("skipping %s (incomplete or unknown task)", path.name)
            continue
        task = tasks[episode.header.task_id]
        verdict = episode.verdict
        usage = episode.usage()
        wall = (episode.ended_at - episode.header.started_at).total_seconds() if episode.ended_at else 0.0
        out[task.id] = TaskOutcome(
            task_id=task.id, capability=task.capability, group=task.group, mode=mode,  # type: ignore[arg-type]
            success=bool(verdict and verdict.success), progress=verdict.progress if verdict else 0.0,
            stop_reason=episode.stop_reason, steps=len(episode.steps),
            prompt_tokens_evaluated=usage["prompt_tokens_evaluated"], completion_tokens=usage["completion_tokens"],
            wall_s=wall, failed_criteria=[c.name for c in verdict.criteria if not c.passed] if verdict else [],
            gate_violations=kit.violations(episode), trace=str(path),
        )
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the paired table of the traces under ``trace_dir`` (and write its JSON to ``--out``).

    Returns:
        1 when no task finished in every mode, else 0.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace_dir", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    tasks = {t.id: t for t in load_suite()}
    kit = load_harness_kit()
    runs = {m: _outcomes(args.trace_dir / m, m, tasks, kit) for m in ("bare", "harness") if (args.trace_dir / m).is_dir()}
    paired = sorted(set.intersection(*(set(o) for o in runs.values()))) if runs else []
    if not paired:
        print("no task finished in every mode", file=sys.stderr)
        return 1
    order = [t for t in tasks if t in paired]
    planner = {}
    report = BenchReport(
        planner=planner, split=None, task_ids=order, kit=kit.describe(),
        runs={m: SuiteReport(planner=planner, outcomes=[o[t] for t in order], mode=m) for m, o in runs.items()},  # type: ignore[arg-type]
    )
    print(f"paired tasks: {len(order)}: {', '.join(order)}\n")
    for t in order:
        print(f"  {t:40} " + "  ".join(f"{m}={'PASS' if runs[m][t].success else 'fail'}" for m in runs))
    print()
    print(report.markdown())
    if args.out:
        args.out.write_text(json.dumps(report.to_json(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
