"""Tool exposure by retrieval on the whole phone: recall@K of the oracle's tools, and the time a step pays.

No model: each dev task of the generated suite (``pocketpilot/tasks/suite``) has its oracle
replayed on a fresh world, and at every oracle step that calls tools (or delegates them) the
adapter's exposure is asked what it would show at that point, as the harness asks it:

- the universe is every tool of the task's world (``--exposure phone``: every app installed,
  nothing said about which the task needs);
- the query is the request and the previous step's results (the feedback the planner reads);
- the tools already called in the run stay exposed (pinned);
- a memory task's evidence is what the harness recalls for the goal (its ``RECALL_K`` hits from
  the task's seeded store) and shows with the request.

Reported per configuration and K (no "more tools" widening counted: it is the fallback):

- step recall: the share of a step's needed tools that were shown, averaged over steps;
- task recall: the share of tasks in which every step showed every tool it needed;
- per-step latency of ``expose`` (median, p95) in ms, index built beforehand (it is cached per
  tool set; its one-time build cost is printed apart).

Configurations: ``keyword`` (BM25 alone) is the baseline of the same run, ``hybrid`` fuses BM25
with the MiniLM embedder (skipped, with a line saying so, when the embedder is not built).
Targets: recall@K >= 0.95 on dev, <= 50 ms per step. Tune on dev only (the default split).

    .venv/bin/python bench/bench_tool_retrieval.py [--k 8 12 16 24] [--limit N] [--split dev]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from dataclasses import dataclass, field

from pocketpilot.adapters.tool_retrieval import ToolRetrievalSettings, ToolRetriever
from pocketpilot.contracts import Delegate, ToolCallAction
from pocketpilot.evaluation.task_episode import RECALL_K
from pocketpilot.memory.embedders import load_default_embedder
from pocketpilot.tasks import load_suite, prepare
from pocketpilot.tasks.loader import _criterion_tools
from pocketpilot.tasks.oracle import run_oracle
from pocketpilot.tasks.suite import load_generated_suite


@dataclass
class Probe:
    """One oracle step that needs tools: what the harness would know there."""

    task_id: str
    request: str
    evidence: list[str]
    state: str
    pinned: list[str]
    needed: list[str]
    required: list[str]
    """The needed tools the task asks for: a criterion names them, or they change state (an
    oracle's incidental read that nothing judges is its own choice, not the task's need)."""


@dataclass
class TaskProbes:
    """One task's universe (the world's every tool, with the app each belongs to) and its probes."""

    task_id: str
    specs: list
    apps: dict[str, str]
    probes: list[Probe] = field(default_factory=list)


def _feedback(results) -> str:
    """The last results as the planner reads them (the harness's feedback JSON, notices aside)."""
    if len(results) == 1:
        body = results[0].model_dump(mode="json", exclude_defaults=True)
        body.setdefault("ok", results[0].ok)
    elif results:
        body = {"results": [r.model_dump(mode="json", exclude_defaults=True) | {"ok": r.ok} for r in results]}
    else:
        body = {}
    return json.dumps(body, ensure_ascii=False, default=str) if body else ""


async def _recalled(task, embedder) -> list[str]:
    """The memories the harness would recall for the goal and show with it (its RECALL_K hits)."""
    if not task.memory:
        return []
    run = prepare(task, memory=True, embedder=embedder)
    try:
        hits = await run.memory.bound.search(task.goal, k=RECALL_K)
        return [h.content for h in hits]
    finally:
        run.close()


async def _probes(task, embedder) -> TaskProbes | None:
    evidence = await _recalled(task, embedder)
    episode, run = await run_oracle(task)
    try:
        specs = list(run.world.specs().values())
        apps = {tool: app for app, tools in run.world.apps().items() for tool in tools}
    finally:
        run.close()
    out = TaskProbes(task.id, specs, apps)
    by_name = {s.name: s for s in specs}
    judged = {name for c in task.criteria for name, _ in _criterion_tools(c)}
    used: list[str] = []
    state = ""
    for step in episode.steps:
        if isinstance(step.action, ToolCallAction):
            needed = [c.name for c in step.action.calls]
        elif isinstance(step.action, Delegate):
            needed = list(step.action.tools)
        else:
            needed = []
        if needed:
            required = [n for n in needed if n in judged or (n in by_name and not by_name[n].read_only)]
            out.probes.append(Probe(task.id, task.goal, evidence, state, list(used), needed, required))
        if isinstance(step.action, ToolCallAction):
            used += [c.name for c in step.action.calls if c.name not in used]
            state = _feedback(step.results)
    return out if out.probes else None


def _p95(xs: list[float]) -> float:
    return sorted(xs)[int(0.95 * (len(xs) - 1))]


def _measure(tasks: list[TaskProbes], settings: ToolRetrievalSettings, embedder) -> dict:
    retriever = ToolRetriever(settings, embedder)
    starts: list[float] = []
    recall: dict[str, list[float]] = {"needed": [], "required": []}
    task_hits = {"needed": 0, "required": 0}
    lat: list[float] = []
    misses: dict[str, int] = {}
    first_build = None
    for tp in tasks:
        retriever.apps = tp.apps
        t0 = time.perf_counter()
        # the index (cached per tool set) and the request side's scores, once per run
        exposure = retriever.exposure(tp.specs, tp.probes[0].request, tp.probes[0].evidence)
        starts.append((time.perf_counter() - t0) * 1000)
        first_build = starts[0] if first_build is None else first_build
        all_hit = {"needed": True, "required": True}
        for p in tp.probes:
            t0 = time.perf_counter()
            shown = set(exposure.expose(p.state, p.pinned))
            lat.append((time.perf_counter() - t0) * 1000)
            for kind, names in (("needed", p.needed), ("required", p.required)):
                if not names:
                    continue
                hit = [n for n in names if n in shown]
                recall[kind].append(len(hit) / len(names))
                if len(hit) < len(names):
                    all_hit[kind] = False
            for n in p.needed:
                if n not in shown:
                    misses[n] = misses.get(n, 0) + 1
        for kind in task_hits:
            task_hits[kind] += all_hit[kind]
    return {
        "k": settings.k,
        "mode": retriever.mode,
        "step_recall": statistics.fmean(recall["needed"]),
        "task_recall": task_hits["needed"] / len(tasks),
        "step_recall_required": statistics.fmean(recall["required"]),
        "task_recall_required": task_hits["required"] / len(tasks),
        "steps": len(recall["needed"]),
        "tasks": len(tasks),
        "latency_ms_median": statistics.median(lat),
        "latency_ms_p95": _p95(lat),
        "run_start_ms_first": first_build,
        "run_start_ms_median": statistics.median(starts[1:] or starts),
        "top_misses": sorted(misses.items(), key=lambda p: -p[1])[:6],
    }


def main(argv: list[str] | None = None) -> int:
    """Replay the split's oracles, measure each configuration and K, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=["dev", "evolve"], help="tune on dev only")
    parser.add_argument("--k", type=int, nargs="+", default=[8, 12, 16, 24])
    parser.add_argument("--limit", type=int, default=None, help="at most N tasks (a stated subset)")
    parser.add_argument("--every", type=int, default=1, help="every Nth task only (a spread subset)")
    parser.add_argument("--keyword-only", action="store_true", help="the BM25 baseline alone (fast)")
    parser.add_argument("--vector-share", type=float, default=None)
    parser.add_argument("--state-weight", type=float, default=None)
    parser.add_argument("--state-vectors", action="store_true", help="embed each step's state too")
    parser.add_argument("--no-clause-vectors", action="store_true", help="match a request's clauses by keywords only")
    parser.add_argument("--no-lookups", action="store_true", help="no id-finding read beside a tool that takes an id")
    parser.add_argument("--tasks", default=None, help="a task folder instead of the generated suite's (its --split)")
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args(argv)
    if any(k < 1 for k in args.k):
        parser.error("K must be >= 1")

    tasks = load_suite(args.split, directory=args.tasks) if args.tasks else load_generated_suite(args.split)
    tasks = tasks[:: args.every][: args.limit]
    embedder = load_default_embedder()
    t0 = time.perf_counter()
    probes = [tp for tp in (asyncio.run(_probes(t, embedder)) for t in tasks) if tp is not None]
    print(f"{len(tasks)} {args.split} task(s), {len(probes)} with tool steps, "
          f"{sum(len(tp.probes) for tp in probes)} tool step(s); "
          f"universe {len(probes[0].specs)} tools (whole phone); oracle replay {time.perf_counter() - t0:.1f}s")
    if embedder is None:
        print("hybrid: skipped (no embedder built; python -m pocketpilot.memory.build_embedder)")
    base = {}
    if args.vector_share is not None:
        base["vector_share"] = args.vector_share
    if args.state_weight is not None:
        base["state_weight"] = args.state_weight
    if args.state_vectors:
        base["state_vectors"] = True
    if args.no_clause_vectors:
        base["clause_vectors"] = False
    if args.no_lookups:
        base["lookups"] = False
    rows = []
    for k in args.k:
        for hybrid in (False, True):
            if hybrid and (embedder is None or args.keyword_only):
                continue
            settings = ToolRetrievalSettings(k=k, hybrid=hybrid, **base)
            rows.append(_measure(probes, settings, embedder if hybrid else None))
            r = rows[-1]
            print(f"K={k:3d} {r['mode']:8s} all oracle tools: step {r['step_recall']:.3f} task {r['task_recall']:.3f}"
                  f" | required: step {r['step_recall_required']:.3f} task {r['task_recall_required']:.3f}"
                  f" | per step median {r['latency_ms_median']:.1f} ms p95 {r['latency_ms_p95']:.1f} ms"
                  f" | run start {r['run_start_ms_first']:.0f} ms first (index build), {r['run_start_ms_median']:.1f} ms after"
                  f" | misses {r['top_misses'][:3]}")
    print("\nrecall@K, step/task (all oracle tools | required tools); baseline keyword = BM25 alone, same run")
    print("K    keyword                      hybrid                       hybrid - keyword (step, all | required)")
    for k in args.k:
        kw = next(r for r in rows if r["k"] == k and r["mode"] == "keyword")
        hy = next((r for r in rows if r["k"] == k and r["mode"] == "hybrid"), None)

        def cell(r: dict) -> str:
            return (f"{r['step_recall']:.3f}/{r['task_recall']:.3f} | "
                    f"{r['step_recall_required']:.3f}/{r['task_recall_required']:.3f}")

        diff = (f"{hy['step_recall'] - kw['step_recall']:+.3f} | "
                f"{hy['step_recall_required'] - kw['step_recall_required']:+.3f}") if hy else "n/a"
        print(f"{k:<4} {cell(kw):28s} {cell(hy) if hy else 'n/a':28s} {diff}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"split": args.split, "rows": rows, "loadavg": os.getloadavg()}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
