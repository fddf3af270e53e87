r"""Ablation of every default policy: each one on and off, on dev (prints the table; not a test).

Runs the harness with η's whole policy set on the selected tasks (or reads such a run from
``--from-traces``), then, for each policy but the safety ones (gates, confirmation), runs again
without it only the tasks it acted on: each step records the policies whose outcome changed it
(``Step.interventions``), and under greedy decoding a policy that changed no step of a run
could not have changed the run (:mod:`pocketpilot.evaluation.ablation`). Prints one line per
policy: the tasks it acted on, passed with and without it there, the net cost (without − with)
and the verdict (``keep``, ``costs tasks: remove or fix``, ``never intervened``).
``--verify-untouched N`` checks the assumption: per policy, N tasks it never acted on run again
without it must repeat the baseline's actions (a mismatch is reported, not raised).

The lead's command (every run loads the GGUF model: under the model lock; the baseline costs one
run per task, then one run per (policy, task it acted on), plus N per policy to verify)::

    flock /work/runs/model.lock .venv/bin/python bench/bench_ablation.py --tasks pocketpilot/tasks/suite \
        --split dev --per-group 6 --threads 2 --verify-untouched 1 --trace-dir /tmp/ablation_traces \
        --out /tmp/ablation.json --markdown /tmp/ablation.md

``--trace-dir`` keeps the baseline as ``pocketpilot bench --trace-dir`` does (``harness/`` and
``outcomes.jsonl``) and each rerun's row in ``ablation.jsonl``, all written as they finish: the
same command with ``--resume`` goes on where a killed run stopped, and another ablation of the
same tasks can start from the baseline (``--from-traces /tmp/ablation_traces``, same selection). A ``pocketpilot bench`` folder
serves too when its traces were written after steps recorded their interventions and under this
η's policy set (anything else is refused); run it with the same planner flags, or the reruns are
not paired with it. The JSON's ``ablation`` key is the ``{policy: cost}`` mapping evolve reads:
``pocketpilot evolve --tasks DIR --ablation /tmp/ablation.json``. Tune on dev only.

``--decode-memo PATH`` serves a rerun's steps whose prompt the left-out policy did not change from
the memo (:mod:`pocketpilot.harness.planners.decode_memo`) instead of decoding them again. Leave it
off with ``--verify-untouched``: a served rerun repeats the baseline by construction, so it checks nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.errors import PocketPilotError, UsageError  # noqa: E402
from pocketpilot.evaluation.ablation import (  # noqa: E402
    AblationReport,
    PlannerFor,
    baseline_from_traces,
    check_policies,
    run_ablation,
)
from pocketpilot.evaluation.task_episode import HarnessKit, load_harness_kit  # noqa: E402
from pocketpilot.harness import Planner  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _planner import llama_planner, task_window  # noqa: E402
from _report_io import say as _say  # noqa: E402


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--tasks", default=None, help="a task folder (default: the bundled hand-written suite)")
    ap.add_argument("--split", choices=["dev", "evolve"], default="dev", help="tune on dev (evolve for a check)")
    ap.add_argument("--task-id", action="append", default=[], help="only these tasks (repeatable)")
    ap.add_argument("--group", action="append", default=[], help="only these capability groups (repeatable)")
    ap.add_argument("--per-group", type=int, default=None, help="N evenly spaced tasks of each group (as bench)")
    ap.add_argument("--limit", type=int, default=None, help="at most N tasks (as bench)")
    ap.add_argument("--policies", default="", help="comma-separated policies to ablate (default: every one but "
                                                   "the safety policies)")
    ap.add_argument("--from-traces", type=Path, default=None,
                    help="the baseline from a bench --trace-dir folder (outcomes.jsonl and harness/ traces)")
    ap.add_argument("--verify-untouched", type=int, default=0, metavar="N",
                    help="per policy, rerun N tasks it never acted on without it and compare the actions")
    ap.add_argument("--trace-dir", type=Path, default=None,
                    help="traces: harness/ and outcomes.jsonl (the baseline), without-<policy>/ and ablation.jsonl")
    ap.add_argument("--resume", action="store_true",
                    help="keep what --trace-dir holds from an earlier, interrupted run (baseline and reruns)")
    ap.add_argument("--out", type=Path, default=None, help="the JSON report")
    ap.add_argument("--markdown", type=Path, default=None, help="the Markdown table")
    ap.add_argument("--model", default="default", help="catalogue name or .gguf path")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
    ap.add_argument("--n-ctx", type=int, default=None, help="context window (default: the largest a task asks, else 8192)")
    ap.add_argument("--max-tokens", type=int, default=256, help="most tokens one action may take")
    ap.add_argument("--reproducible", action="store_true", help="reuse only the stable prefix from the KV cache")
    ap.add_argument("--decode-memo", type=Path, default=None, metavar="PATH",
                    help="serve greedy decodes already made from this JSONL file (not with --verify-untouched)")
    ap.add_argument("--no-embedder", dest="embedder", action="store_false",
                    help="keyword-only memory retrieval (bench's default is the MiniLM embedder)")
    return ap


def _llama(args: argparse.Namespace, tasks: Sequence[Any]) -> Planner:
    """The in-process planner, built as ``pocketpilot bench`` builds it from the same flags."""
    return llama_planner(args.model, max_tokens=args.max_tokens, n_ctx=task_window(args.n_ctx, tasks),
                         threads=args.threads, reproducible=args.reproducible)


def _planner_differs(report_planner: dict[str, Any], baseline: dict[str, Any] | None) -> list[str]:
    """The planner fields a traced baseline ran with that the reruns do not (model, hash, sampler, eval)."""
    if baseline is None:
        return []
    keys = ("model_sha256", "quant_type", "sampler", "eval")
    return [k for k in keys if k in report_planner and baseline.get(k) != report_planner.get(k)]


def write(report: AblationReport, out: Path | None, markdown: Path | None) -> str:
    """Print the table and the ``{policy: cost}`` mapping; write the JSON and Markdown files asked for."""
    table = report.markdown()
    _say("")
    _say(table)
    _say("")
    _say("ablation (policy_off_candidates): " + json.dumps(report.ablation()))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
        _say(f"report: {out}")
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(table + "\n", encoding="utf-8")
    return table


def main(argv: Sequence[str] | None = None, *, planner_for: PlannerFor | None = None,
         kit: HarnessKit | None = None) -> int:
    """Run the ablation and print its table; 2 with one line on bad input.

    ``planner_for`` and ``kit`` replace the model and the bundled kit (tests: a scripted planner).
    """
    from pocketpilot.cli.bench import select_tasks

    args = _parser().parse_args(argv)
    try:
        if args.verify_untouched < 0:
            raise UsageError("--verify-untouched takes N >= 0")
        if args.decode_memo is not None and args.verify_untouched:
            raise UsageError("--decode-memo serves untouched reruns from the baseline: --verify-untouched would check nothing")
        tasks = select_tasks(args.split, tuple(args.task_id), tuple(args.group), args.limit, args.per_group,
                             directory=args.tasks)
        kit = kit if kit is not None else load_harness_kit()
        policies = check_policies([p.strip() for p in args.policies.split(",") if p.strip()], kit)
        if args.resume and args.trace_dir is None:
            raise UsageError("--resume needs --trace-dir (where the earlier run's outcomes are)")
        baseline = baseline_from_traces(args.from_traces, tasks, kit) if args.from_traces else None
        if args.resume and baseline is None:
            baseline = baseline_from_traces(args.trace_dir, tasks, kit, partial=True)
    except PocketPilotError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    embedder = None
    if planner_for is None and args.embedder:
        from pocketpilot.cli._embedder import default_embedder

        embedder = default_embedder()
    planner = _llama(args, tasks) if planner_for is None else None
    memo = None
    if args.decode_memo is not None:
        from pocketpilot.harness.planners.decode_memo import DecodeMemo, MemoPlanner

        try:
            memo = DecodeMemo(args.decode_memo)
        except PocketPilotError as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 2
        inner = planner_for or (lambda task, off: planner)
        planner_for = lambda task, off: MemoPlanner(inner(task, off), memo)  # noqa: E731
    _say(f"{len(tasks)} task(s) of the {args.split} split; ablating {', '.join(policies)}"
         f"{'; baseline from ' + str(args.from_traces) if baseline else ''}")

    async def go() -> AblationReport:
        if planner is not None:
            await planner.load()
        t0 = time.monotonic()
        try:
            report = await run_ablation(tasks, planner_for or (lambda task, off: planner), kit=kit, policies=policies,
                                        baseline=baseline, verify_untouched=args.verify_untouched, embedder=embedder,
                                        trace_dir=args.trace_dir, resume=args.resume, split=args.split,
                                        on_event=_say)
        finally:
            if planner is not None:
                await planner.aclose()
        info = planner.info.model_dump(mode="json") if planner is not None else {"backend": "injected"}
        first = next(iter(baseline.values())).planner if baseline else None
        meta = {"wall_s": round(time.monotonic() - t0, 1), "load_average": os.getloadavg()[0],
                "from_traces": str(args.from_traces) if args.from_traces else None,
                "embedder": getattr(embedder, "name", None) or "none (keyword-only)",
                "planner_differs_from_baseline": _planner_differs(info, first)}
        return report.model_copy(update={"planner": info, "meta": meta})

    report = asyncio.run(go())
    if memo is not None:
        _say(memo.stats.line())
    differs = report.meta.get("planner_differs_from_baseline")
    if differs:
        _say(f"warning: the traced baseline ran with another {', '.join(differs)}: the reruns are not paired with it")
    write(report, args.out, args.markdown)
    bad = report.mismatches()
    if bad:
        _say(f"exactness check FAILED on {len(bad)} rerun(s): a policy that never acted changed the run "
             "(see 'untouched' in the JSON)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
