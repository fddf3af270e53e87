"""BFCL multi-turn base through pocketpilot: adapter validation, and bare vs harness with a planner.

Usage::

    # no model: the ground truth replayed through Session + tools, and a do-nothing control
    python bench/bench_bfcl.py --validate [--limit N] [--ids a,b] [--out validate.json]

    # a planner, bare and harness interleaved task by task (resumable: rerun the same command)
    python bench/bench_bfcl.py --compare [--model qwen2.5-coder-1.5b] [--limit N] [--ids a,b]
        [--threads N] [--trace-dir DIR] [--out bfcl_compare.json] [--modes bare,harness]

The bfcl-eval wheel is fetched at run time (``pip download --no-deps``) into
``$POCKETPILOT_HOME/bench/bfcl`` (``--cache`` overrides) and never installed. Modes mean what
they mean in ``pocketpilot.evaluation.compare`` (see ``pocketpilot.suites.bfcl_run``). A task passes
when BFCL's own checker accepts every turn (state and execution-result checks).

Resuming: ``--out`` is rewritten after every task; a rerun with the same ``--out`` skips the
(task, mode) pairs it already holds, and ``--trace-dir`` keeps each turn's trace.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.contracts import Finish  # noqa: E402
from pocketpilot.errors import PocketPilotError  # noqa: E402
from pocketpilot.evaluation.compare import HarnessKit, load_harness_kit  # noqa: E402
from pocketpilot.harness import HarnessConfig, Planner  # noqa: E402
from pocketpilot.harness.planners import ScriptedPlanner  # noqa: E402
from pocketpilot.suites import BfclSuite, BfclTask, SuiteError  # noqa: E402
from pocketpilot.suites.bfcl_run import (  # noqa: E402
    BFCL_BUDGET,
    DEFAULT_TURN_STEPS,
    BfclOutcome,
    oracle_actions,
    run_bfcl_task,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _planner import llama_planner  # noqa: E402
from _report_io import save_report as _save  # noqa: E402

SCHEMA = "pocketpilot.bench.bfcl/1"
PlannerFor = Callable[[BfclTask, str], Planner]


def turn_rate(outcomes: Sequence[BfclOutcome]) -> float:
    """Turn-level accuracy: turns BFCL's checker accepted, of every turn of the tasks.

    A turn left unrun after a failed one (the default stops there) counts as not passed, so the
    figure never rises by stopping early; ``--all-turns`` judges every turn.
    """
    turns = sum(o.turns for o in outcomes)
    return sum(sum(c.valid for c in o.checks) for o in outcomes) / turns if turns else 0.0


def summary(outcomes: Sequence[BfclOutcome]) -> dict[str, Any]:
    """Pass rate (task level), turns passed (turn level), medians of wall time and steps per task."""
    if not outcomes:
        return {"tasks": 0}
    return {
        "tasks": len(outcomes),
        "passed": sum(o.success for o in outcomes),
        "pass_rate": sum(o.success for o in outcomes) / len(outcomes),
        "turns": sum(o.turns for o in outcomes),
        "turns_passed": sum(sum(c.valid for c in o.checks) for o in outcomes),
        "turns_passed_rate": turn_rate(outcomes),
        "median_wall_s": statistics.median(o.wall_s for o in outcomes),
        "median_steps": statistics.median(o.steps for o in outcomes),
        "errors": sum(o.error is not None for o in outcomes),
    }


def load_done(
    out: Path | None, planner_info: dict[str, Any] | None = None
) -> dict[str, dict[str, BfclOutcome]]:
    """Outcomes already in ``out``, by mode and task id (empty if none).

    A report of another planner is refused: resuming into it would mix two models' outcomes.
    """
    if out is None or not out.exists():
        return {}
    data = json.loads(out.read_text())
    if data.get("schema") != SCHEMA:
        raise SystemExit(f"{out} is not a {SCHEMA} report; choose another --out")
    saved = (data.get("planner") or {}).get("model")
    if planner_info and saved not in (None, planner_info.get("model")):
        raise SystemExit(f"{out} holds runs of {saved}, not {planner_info.get('model')}")
    return {
        mode: {o["task_id"]: BfclOutcome.model_validate(o) for o in run["outcomes"]}
        for mode, run in data.get("runs", {}).items()
    }


def report(
    suite: BfclSuite,
    tasks: Sequence[BfclTask],
    done: dict[str, dict[str, BfclOutcome]],
    planner: dict[str, Any],
    kit: dict[str, Any] | None,
) -> dict[str, Any]:
    """The saved form: per-mode summaries and outcomes (in task order), and the lift."""
    order = {t.id: i for i, t in enumerate(tasks)}
    runs = {}
    for mode, by_id in done.items():
        outcomes = sorted(by_id.values(), key=lambda o: order.get(o.task_id, len(order)))
        runs[mode] = {"summary": summary(outcomes), "outcomes": [o.model_dump(mode="json") for o in outcomes]}
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "suite": {"wheel": suite.wheel.path.name, "category": "multi_turn_base"},
        "planner": planner,
        "kit": kit,
        "task_ids": [t.id for t in tasks],
        "runs": runs,
    }
    if "bare" in done and "harness" in done:
        both = sorted(set(done["bare"]) & set(done["harness"]))
        if both:
            bare = sum(done["bare"][i].success for i in both) / len(both)
            harness = sum(done["harness"][i].success for i in both) / len(both)
            out["paired_tasks"] = len(both)
            out["lift_points"] = round(100 * (harness - bare), 2)
            turns = {m: turn_rate([done[m][i] for i in both]) for m in ("bare", "harness")}
            out["turn_lift_points"] = round(100 * (turns["harness"] - turns["bare"]), 2)
    return out


async def run_modes(
    suite: BfclSuite,
    tasks: Sequence[BfclTask],
    planner_for: PlannerFor,
    *,
    modes: Sequence[str],
    out: Path | None = None,
    trace_dir: Path | None = None,
    kit: HarnessKit | None = None,
    config: HarnessConfig | None = None,
    stop_at_first_failure: bool = True,
    planner_info: dict[str, Any] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every task in every mode, interleaved task by task.

    (task, mode) pairs already in ``out`` are skipped: the full run is long and gets interrupted.
    """
    done = load_done(out, planner_info)
    for mode in modes:
        done.setdefault(mode, {})
    describe = kit.describe() if kit is not None and "harness" in modes else None
    for i, task in enumerate(tasks):
        for mode in modes:
            if task.id in done[mode]:
                continue
            sub = trace_dir / mode if trace_dir is not None else None
            outcome = await run_bfcl_task(
                suite,
                task,
                planner_for(task, mode),
                mode=mode,  # type: ignore[arg-type]
                kit=kit,
                config=config,
                trace_dir=sub,
                stop_at_first_failure=stop_at_first_failure,
            )
            done[mode][task.id] = outcome
            bad = outcome.failed_check
            why = "" if outcome.success else f" ({outcome.error or (bad.error_type if bad else 'stopped')})"
            log(
                f"[{i + 1}/{len(tasks)}] {mode:<7} {task.id}: {'PASS' if outcome.success else 'fail'}"
                f" {outcome.turns_run}/{outcome.turns} turns, {outcome.steps} steps,"
                f" {outcome.wall_s:.1f}s{why}"
            )
            _save(out, report(suite, tasks, done, planner_info or {}, describe))
    return report(suite, tasks, done, planner_info or {}, describe)


def print_summary(data: dict[str, Any], label: dict[str, str] | None = None) -> None:
    """Per-mode pass rates, medians and the lift."""
    for mode, run in data["runs"].items():
        s = run["summary"]
        if not s.get("tasks"):
            continue
        print(
            f"{(label or {}).get(mode, mode):<22} {s['passed']}/{s['tasks']} = "
            f"{100 * s['pass_rate']:.1f}% tasks, "
            f"{s['turns_passed']}/{s['turns']} = {100 * s['turns_passed_rate']:.1f}% turns passed; "
            f"median {s['median_wall_s']:.2f}s, "
            f"{s['median_steps']} steps per task; {s['errors']} errors"
        )
    if "lift_points" in data:
        print(
            f"lift (harness - bare, {data['paired_tasks']} paired tasks): {data['lift_points']:+.1f} points"
            f" task level, {data.get('turn_lift_points', 0.0):+.1f} points turn level"
        )


def _oracle(suite: BfclSuite) -> PlannerFor:
    return lambda task, mode: ScriptedPlanner(oracle_actions(suite, task), name="bfcl-oracle", validate=False)


def _do_nothing(task: BfclTask, mode: str) -> Planner:
    return ScriptedPlanner([Finish(summary="done")] * len(task.turns), name="do-nothing")


async def validate(
    suite: BfclSuite, tasks: Sequence[BfclTask], *, harness: bool, out: Path | None
) -> dict[str, Any]:
    """Ground-truth replay (bare, and harness if asked) and the do-nothing control, without a model."""
    quiet: Callable[[str], None] = lambda line: None  # noqa: E731
    t0 = time.monotonic()
    replay = await run_modes(
        suite, tasks, _oracle(suite), modes=["bare"], stop_at_first_failure=False, log=quiet
    )
    control = await run_modes(suite, tasks, _do_nothing, modes=["bare"], log=quiet)
    result: dict[str, Any] = {
        "schema": SCHEMA + "#validate",
        "wheel": suite.wheel.path.name,
        "replay": replay["runs"]["bare"],
        "do_nothing": control["runs"]["bare"],
    }
    if harness:
        kit = load_harness_kit()
        h = await run_modes(
            suite, tasks, _oracle(suite), modes=["harness"], kit=kit, stop_at_first_failure=False, log=quiet
        )
        result["replay_harness"] = h["runs"]["harness"]
    result["wall_s"] = time.monotonic() - t0
    for key, label in (
        ("replay", "replay (bare)"),
        ("replay_harness", "replay (harness mode)"),
        ("do_nothing", "do-nothing control"),
    ):
        if key in result:
            s = result[key]["summary"]
            print(f"{label:<22} {s['passed']}/{s['tasks']} = {100 * s['pass_rate']:.1f}%")
            for o in result[key]["outcomes"]:
                if not o["success"] and key != "do_nothing":
                    bad = next((c for c in o["checks"] if not c["valid"]), None)
                    print(
                        f"  {o['task_id']}: {o['error'] or (bad and bad['error_type'])}: "
                        f"{(bad and (bad['details'] or bad['error_message']) or '')[:160]}"
                    )
    print(f"({result['wall_s']:.1f}s)")
    _save(out, result)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Validate the adapter, or compare bare and harness runs of a planner, as the flags ask.

    Returns:
        The exit status: 2, with one line on stderr, for a wheel, mode or planner that cannot be used.
    """
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--validate", action="store_true", help="replay and do-nothing rates (no model)")
    what.add_argument("--compare", action="store_true", help="bare vs harness with a planner")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="catalogue name or .gguf path")
    ap.add_argument("--limit", type=int, default=None, help="first N tasks")
    ap.add_argument("--ids", default=None, help="comma-separated task ids (multi_turn_base_0,...)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: all cores)")
    ap.add_argument("--n-ctx", type=int, default=12288, help="llama.cpp context (BFCL's docs are long)")
    ap.add_argument("--max-tokens", type=int, default=400, help="generated tokens per step")
    ap.add_argument("--max-steps", type=int, default=DEFAULT_TURN_STEPS, help="planner steps per user turn")
    ap.add_argument("--modes", default="bare,harness", help="modes to run, in this order per task")
    ap.add_argument("--all-turns", action="store_true", help="run every turn even after a failed one")
    ap.add_argument("--trace-dir", type=Path, default=None, help="per-turn traces, under <dir>/<mode>/")
    ap.add_argument("--out", type=Path, default=None,
                    help="JSON report; compare: also the resume state "
                    "(default: in --trace-dir, else ./bfcl_compare.json)")
    ap.add_argument("--cache", type=Path, default=None, help="where the wheel is kept")
    ap.add_argument("--harness-replay", action="store_true", help="validate: also replay in harness mode")
    args = ap.parse_args(argv)
    try:
        suite = BfclSuite.fetch(args.cache)
        ids = [i.strip() for i in args.ids.split(",") if i.strip()] if args.ids else None
        tasks = suite.select(ids, args.limit)
    except SuiteError as exc:
        print(f"bfcl: {exc}", file=sys.stderr)
        return 2
    print(f"wheel {suite.wheel.path.name}: {len(tasks)} of {len(suite.tasks)} multi_turn_base tasks")
    if args.validate:
        asyncio.run(validate(suite, tasks, harness=args.harness_replay, out=args.out))
        return 0
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"bare", "harness"}:
        print("--modes takes bare and/or harness", file=sys.stderr)
        return 2
    # beside the traces when there are any: one folder then holds everything a resume needs
    out = args.out or (args.trace_dir / "bfcl_compare.json" if args.trace_dir else Path("bfcl_compare.json"))
    try:
        planner = llama_planner(args.model, max_tokens=args.max_tokens, n_ctx=args.n_ctx, threads=args.threads)
    except PocketPilotError as exc:
        print(f"planner: {exc}", file=sys.stderr)
        return 2
    kit = load_harness_kit() if "harness" in modes else None
    config = HarnessConfig(max_steps=args.max_steps, budget=BFCL_BUDGET)

    async def go() -> dict[str, Any]:
        await planner.load()  # before the report's header: the model's sha256 and quantization
        try:
            return await run_modes(
                suite,
                tasks,
                lambda task, mode: planner,
                modes=modes,
                out=out,
                trace_dir=args.trace_dir,
                kit=kit,
                config=config,
                stop_at_first_failure=not args.all_turns,
                planner_info=planner.info.model_dump(mode="json"),
            )
        finally:
            await planner.aclose()

    data = asyncio.run(go())
    print_summary(data)
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
