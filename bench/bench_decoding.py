r"""One-shot decoding against choose-then-fill and think-then-act, in harness mode (not a test).

One planner, loaded once; each task runs once per configuration, the configurations
interleaved task by task so a shared machine's load drift hits them alike:

1. ``one-shot``: one constrained decode of the whole action (today's default, the baseline).
2. ``choose``: choose, then fill (``--choose-then-fill``): the tools, then their arguments.
3. ``think``: think, then act (``--think-tokens N``): a bounded reasoning line, then the action.
4. ``think+choose`` (only with ``--with-both``).

Reports per configuration: tasks passed, the median decode time per step (``decode_s``, every
phase), the median step latency (prompt evaluation included) and completion tokens per step,
and each median's ratio to one-shot's from the same run. The sample is stated: ``--per-group N``
evenly spaced tasks of each group of ``--split`` (default dev) of ``--tasks`` (default the
generated suite), as ``pocketpilot bench --per-group`` draws them.

    flock /work/runs/model.lock python bench/bench_decoding.py --model qwen2.5-coder-1.5b \\
        --split dev --per-group 4 --think-tokens 48 --threads 2 --out decoding.json
"""

# ruff: noqa: T201 - a bench script prints its report

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

CONFIGS = {
    "one-shot": {"think_tokens": 0, "choose_then_fill": False},
    "choose": {"think_tokens": 0, "choose_then_fill": True},
    "think": {"think_tokens": None, "choose_then_fill": False},  # None: --think-tokens
    "think+choose": {"think_tokens": None, "choose_then_fill": True},
}
SUITE = Path(__file__).resolve().parent.parent / "pocketpilot" / "tasks" / "suite"


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _num(x: float) -> str:
    return "-" if x != x else f"{x:.0f}"  # NaN: no thought in this configuration


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b and b == b and a == a else "-"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every task of the sample in every configuration; the rows and their summary."""
    from pocketpilot.cli.bench import select_tasks
    from pocketpilot.contracts import SamplerSettings
    from pocketpilot.evaluation.compare import load_harness_kit, run_task
    from pocketpilot.harness.planners import LlamaCppPlanner
    from pocketpilot.harness.planners.phases import check_think_budget
    from pocketpilot.models.store import ModelStore

    check_think_budget(args.think_tokens, args.max_tokens, args.n_ctx)
    names = ["one-shot", "choose", "think"] + (["think+choose"] if args.with_both else [])
    tasks = select_tasks(args.split, tuple(args.task_id), (), args.limit, args.per_group,
                         directory=str(args.tasks) if args.tasks else None)
    store = ModelStore()
    path, entry = store.resolve(args.model)
    planner = LlamaCppPlanner(path, sampler=SamplerSettings(temperature=0.0, max_tokens=args.max_tokens),
                              n_ctx=args.n_ctx, n_threads=args.threads, sha256=entry.sha256 if entry else None)
    embedder = None
    if args.embedder:
        from pocketpilot.cli._embedder import default_embedder

        embedder = default_embedder()
    kit = load_harness_kit()
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    t_start = time.monotonic()
    try:
        await planner.load()
        for i, task in enumerate(tasks):
            for name in names:
                conf = CONFIGS[name]
                planner.think_tokens = args.think_tokens if conf["think_tokens"] is None else conf["think_tokens"]
                planner.choose_then_fill = conf["choose_then_fill"]
                episode, outcome = await run_task(task, planner, mode="harness", embedder=embedder, kit=kit)
                turns = [s.planner for s in episode.steps if s.planner is not None]
                row = {
                    "task_id": task.id, "group": task.group, "success": outcome.success, "steps": outcome.steps,
                    "stop_reason": outcome.stop_reason, "wall_s": outcome.wall_s,
                    "decode_s": [t.decode_s for t in turns], "latency_s": [t.latency_s for t in turns],
                    "completion_tokens": [t.completion_tokens for t in turns],
                    "thought_tokens": [p.tokens for t in turns for p in t.phases if p.name == "thought"],
                    "thoughts": [t.thought for t in turns if t.thought is not None][:3],
                }
                rows[name].append(row)
                print(f"[{i + 1}/{len(tasks)} {name:12}] {'PASS' if outcome.success else 'fail'} {task.id:40} "
                      f"steps={outcome.steps} decode/step={_median(row['decode_s']):.2f}s "
                      f"{outcome.wall_s:.1f}s stop={outcome.stop_reason}", flush=True)
    finally:
        planner.think_tokens, planner.choose_then_fill = 0, False
        baseline_settings = planner.eval_settings.model_dump(mode="json")
        await planner.aclose()
    summary = {}
    for name in names:
        rs = rows[name]
        summary[name] = {
            "passed": sum(r["success"] for r in rs), "tasks": len(rs),
            "decode_s_median": _median([x for r in rs for x in r["decode_s"]]),
            "latency_s_median": _median([x for r in rs for x in r["latency_s"]]),
            "completion_tokens_median": _median([x for r in rs for x in r["completion_tokens"]]),
            "thought_tokens_median": _median([x for r in rs for x in r["thought_tokens"]]),
            "steps": sum(r["steps"] for r in rs),
        }
    return {
        "model": path.name, "split": args.split, "per_group": args.per_group, "task_ids": [t.id for t in tasks],
        "think_tokens": args.think_tokens, "max_tokens": args.max_tokens, "threads": args.threads,
        "load_average": os.getloadavg(), "elapsed_s": time.monotonic() - t_start,
        "eval": baseline_settings,
        "summary": summary, "rows": rows,
    }


def report(result: dict[str, Any]) -> str:
    """The summary as a Markdown table, ratios against one-shot's medians."""
    base = result["summary"]["one-shot"]
    lines = [
        f"model {result['model']}, split {result['split']}, {len(result['task_ids'])} task(s) "
        f"(--per-group {result['per_group']}), think budget {result['think_tokens']} of max_tokens "
        f"{result['max_tokens']}, load average {result['load_average'][0]:.2f}",
        "",
        "| config | passed | decode s/step (median) | vs one-shot | step latency s (median) | vs one-shot "
        "| completion tok/step | thought tok/step |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, s in result["summary"].items():
        lines.append(
            f"| {name} | {s['passed']}/{s['tasks']} | {s['decode_s_median']:.2f} | "
            f"{_ratio(s['decode_s_median'], base['decode_s_median'])} | {s['latency_s_median']:.2f} | "
            f"{_ratio(s['latency_s_median'], base['latency_s_median'])} | {s['completion_tokens_median']:.0f} | "
            f"{_num(s['thought_tokens_median'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, run, print the table (and write the JSON with ``--out``)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="default")
    parser.add_argument("--tasks", type=Path, default=SUITE, help="a folder of task files (default: the generated suite)")
    parser.add_argument("--split", default="dev", choices=("dev", "evolve"), help="never test: tune on dev")
    parser.add_argument("--per-group", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--task-id", action="append", default=[])
    parser.add_argument("--think-tokens", type=int, default=48)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--with-both", action="store_true", help="also think+choose")
    parser.add_argument("--no-embedder", dest="embedder", action="store_false")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    print()
    print(report(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
        print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
