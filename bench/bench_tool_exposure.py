r"""Tool exposure by retrieval on the whole phone, setting by setting (prints a table; not a test).

Runs the harness mode of each selected task with every app of its world installed
(``exposure="phone"``) once per variant of η's ``tool_retrieval`` entry, and reports per variant:
tasks passed, the stops, the prompt tokens llama.cpp evaluated (what its prefix cache could not
reuse) and the wall time. Every run starts cold (the planner's KV cache forgotten, no disk prefix
cache), so order within a task cannot favour a variant. Variants:

- ``default``: no entry (the adapter retrieves with the default settings when the list outgrows
  the tools budget, as ``pocketpilot bench --exposure phone`` runs);
- ``fixed``: ``state_weight=0`` (the default since the cache-fair dev run): a step's results do
  not re-rank the tools, so a run shows one set (its request's best, plus what it used or widened
  to) and the prompt keeps its prefix from step to step;
- ``state``: ``state_weight=0.5`` (the earlier default): the last results re-rank the tools;
- ``k<N>``: the default settings with K = N.

A variant enters η's defaults only after it measures as a gain on dev. Tune on dev only. Every
run loads the GGUF model: run it under the model lock::

    flock /work/runs/model.lock .venv/bin/python bench/bench_tool_exposure.py --tasks pocketpilot/tasks/suite \
        --split dev --per-group 4 --model qwen2.5-coder-1.5b --variants default state --out /tmp/exposure.json

Prompt tokens evaluated do not depend on the machine's load; the wall time does.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.adapters.tool_retrieval import ToolRetrievalSettings  # noqa: E402
from pocketpilot.contracts import Episode  # noqa: E402
from pocketpilot.errors import PocketPilotError, UsageError  # noqa: E402
from pocketpilot.evaluation.task_episode import HarnessKit, RunSettings, load_harness_kit, run_task_episode  # noqa: E402
from pocketpilot.harness import Planner  # noqa: E402
from pocketpilot.tasks import TaskSpec  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _planner import llama_planner, task_window  # noqa: E402
from _report_io import save_report as _save  # noqa: E402
from _report_io import say as _say  # noqa: E402
from _report_io import timed_report  # noqa: E402

PlannerFor = Callable[[TaskSpec, str], Planner]
"""The planner for one (task, variant) run (tests: a scripted planner)."""


def settings_of(name: str) -> ToolRetrievalSettings | None:
    """The ``tool_retrieval`` entry of a variant (None: ``default``, no entry).

    Raises:
        UsageError: an unknown variant, or a K the settings refuse.
    """
    if name == "default":
        return None
    if name == "fixed":
        return ToolRetrievalSettings(state_weight=0.0)
    if name == "state":
        return ToolRetrievalSettings(state_weight=0.5)
    if m := re.fullmatch(r"k(\d+)", name):
        k = int(m.group(1))
        if not 1 <= k <= 128:
            raise UsageError(f"variant {name!r}: K must be between 1 and 128")
        return ToolRetrievalSettings(k=k)
    raise UsageError(f"unknown variant {name!r}; known: default, fixed, state, k<N>")


def _variant(name: str) -> str:
    try:
        settings_of(name)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return name


def variant_kit(base: HarnessKit, name: str) -> HarnessKit:
    """The kit whose η has the variant's ``tool_retrieval`` entry (and nothing else changed)."""
    if base.eta is None:
        raise UsageError("the variants are η settings: the kit needs an η")
    return HarnessKit(base.library, eta=base.eta.model_copy(update={"tool_retrieval": settings_of(name)}))


def record(task: TaskSpec, episode: Episode, wall_s: float) -> dict[str, Any]:
    """One run's row: its verdict and stop, the prompt tokens evaluated, how often the system prompt changed."""
    planned = [s for s in episode.steps if s.planner is not None]
    return {
        "task": task.id,
        "group": task.group,
        "success": bool(episode.verdict and episode.verdict.success),
        "stop": episode.stop_reason,
        "steps": len(episode.steps),
        "prompt_tokens_evaluated": sum(s.planner.prompt_tokens_evaluated or 0 for s in planned),
        "prompt_tokens": sum(s.planner.prompt_tokens or 0 for s in planned),
        # a step records its system prompt only when it changed: the first step, then each new tool list
        "system_prompts": sum(s.system_prompt is not None for s in planned),
        "wall_s": round(wall_s, 2),
    }


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Passes, stops, and the medians of the prompt tokens evaluated and the wall time."""
    return {
        "passed": sum(r["success"] for r in rows),
        "tasks": len(rows),
        "stops": dict(sorted(Counter(r["stop"] for r in rows).items())),
        "median_prompt_tokens_evaluated": statistics.median(r["prompt_tokens_evaluated"] for r in rows) if rows else None,
        "median_wall_s": statistics.median(r["wall_s"] for r in rows) if rows else None,
    }


def table(report: dict[str, Any]) -> str:
    """The Markdown table: one row per variant, with the first variant's figures as the baseline."""
    lines = ["| variant | passed | median prompt tokens evaluated | ratio | median wall s | ratio | stops |",
             "|---|---|---|---|---|---|---|"]
    base = next(iter(report["variants"].values()), None)
    for name, v in report["variants"].items():
        tok, wall = v["median_prompt_tokens_evaluated"], v["median_wall_s"]
        rt = f"{tok / base['median_prompt_tokens_evaluated']:.2f}" if tok and base["median_prompt_tokens_evaluated"] else "-"
        rw = f"{wall / base['median_wall_s']:.2f}" if wall and base["median_wall_s"] else "-"
        stops = ", ".join(f"{k} {n}" for k, n in v["stops"].items())
        wall_text = f"{wall:.1f}" if wall is not None else "-"
        lines.append(f"| {name} | {v['passed']}/{v['tasks']} | {tok} | {rt} | {wall_text} | {rw} | {stops} |")
    return "\n".join(lines)


def _report(meta: dict[str, Any], done: dict[str, dict[str, dict[str, Any]]], variants: Sequence[str],
            tasks: Sequence[TaskSpec]) -> dict[str, Any]:
    out: dict[str, Any] = {"meta": meta, "variants": {}}
    for name in variants:
        rows = [done[name][t.id] for t in tasks if t.id in done.get(name, {})]
        out["variants"][name] = {**summary(rows), "rows": rows}
    return out


async def run_variants(tasks: Sequence[TaskSpec], variants: Sequence[str], planner_for: PlannerFor, *,
                       kit: HarnessKit, meta: dict[str, Any], trace_dir: Path | None = None,
                       out: Path | None = None, embedder: Any = None) -> dict[str, Any]:
    """Every selected task once per variant, task by task (the variants of one task side by side,
    so drift in the machine's speed falls on both), saving after each run. Every run starts with
    the planner's KV cache forgotten, so no variant's prompt is paid by the run before it.
    """
    done: dict[str, dict[str, dict[str, Any]]] = {}
    kits = {name: variant_kit(kit, name) for name in variants}
    for task in tasks:
        for name in variants:
            planner = planner_for(task, name)
            forget = getattr(planner, "forget", None)
            if forget is not None:
                await forget()  # each run pays for its own prompt, whatever ran before it
            t0 = time.monotonic()
            episode, _ = await run_task_episode(task, planner, mode="harness", kit=kits[name],
                                                embedder=embedder, settings=RunSettings(exposure="phone"),
                                                trace_dir=trace_dir / name if trace_dir is not None else None)
            row = record(task, episode, time.monotonic() - t0)
            done.setdefault(name, {})[task.id] = row
            _say(f"{name:10} {task.id:34} {row['stop']:10} {'PASS' if row['success'] else 'fail'}"
                 f"  prompt tokens evaluated {row['prompt_tokens_evaluated']}, {row['wall_s']:.1f} s")
            _save(out, _report(meta, done, variants, tasks))
    return _report(meta, done, variants, tasks)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--tasks", default=None, help="a task folder (default: the bundled hand-written suite)")
    ap.add_argument("--split", choices=["dev", "evolve"], default="dev", help="tune on dev (evolve for a check)")
    ap.add_argument("--task-id", action="append", default=[], help="only these tasks (repeatable)")
    ap.add_argument("--group", action="append", default=[], help="only these capability groups (repeatable)")
    ap.add_argument("--per-group", type=int, default=None, help="N evenly spaced tasks of each group (as bench)")
    ap.add_argument("--limit", type=int, default=None, help="at most N tasks (as bench)")
    ap.add_argument("--variants", nargs="+", default=["default", "state"], type=_variant,
                    help="any of default, fixed, state, k<N> (the first is the baseline of the ratios)")
    ap.add_argument("--trace-dir", type=Path, default=None, help="traces, one folder per variant")
    ap.add_argument("--out", type=Path, default=None, help="the JSON report, written as runs finish")
    ap.add_argument("--model", default="default", help="catalogue name or .gguf path")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    ap.add_argument("--n-ctx", type=int, default=None, help="context window (default: the largest a task asks, else 8192)")
    ap.add_argument("--max-tokens", type=int, default=256, help="most tokens one action may take")
    ap.add_argument("--no-embedder", dest="embedder", action="store_false",
                    help="keyword-only retrieval (the bench's default is the MiniLM embedder)")
    return ap


def main(argv: Sequence[str] | None = None, *, planner_for: PlannerFor | None = None,
         kit: HarnessKit | None = None) -> int:
    """Run the variants and print the table; 2 with one line on bad input.

    ``planner_for`` and ``kit`` replace the model and the bundled kit (tests: a scripted planner).
    """
    from pocketpilot.cli.bench import select_tasks

    args = _parser().parse_args(argv)
    try:
        tasks = select_tasks(args.split, tuple(args.task_id), tuple(args.group), args.limit, args.per_group,
                             directory=args.tasks)
        kit = kit if kit is not None else load_harness_kit()
        for name in args.variants:
            variant_kit(kit, name)
    except PocketPilotError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    meta = {"model": args.model if planner_for is None else "injected", "split": args.split,
            "tasks": [t.id for t in tasks], "exposure": "phone"}
    embedder = None
    if planner_for is None and args.embedder:
        from pocketpilot.cli._embedder import default_embedder

        embedder = default_embedder()
    planner = None
    if planner_for is None:
        planner = llama_planner(args.model, max_tokens=args.max_tokens, n_ctx=task_window(args.n_ctx, tasks),
                                threads=args.threads, prefix_cache=False)
    choose: PlannerFor = planner_for or (lambda task, name: planner)  # type: ignore[arg-type,return-value]
    _say(f"{len(tasks)} task(s) of the {args.split} split, whole phone; variants {', '.join(args.variants)}")

    runs = run_variants(tasks, args.variants, choose, kit=kit, meta=meta,
                        trace_dir=args.trace_dir, out=args.out, embedder=embedder)
    report = asyncio.run(timed_report(runs, meta, planner=planner))
    _save(args.out, report)
    _say("")
    _say(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
