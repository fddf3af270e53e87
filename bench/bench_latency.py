"""Cold start: a new process's first step against a warm step, with the prefix KV cache (not a test).

Measured side by side in one run, each in fresh processes:

1. First step of a new process, divided by a warm step of the same request (the prefix in the
   KV cache, the request evaluated). Three cases: no prefix cache (the baseline), a cold cache
   (evaluates and saves the prefix), a warm cache (restores it). Target: restored <= 1.5x.
2. The demo end to end (process start to exit), after a first run has filled the caches:
   ``pocketpilot demo`` as ``make demo`` runs it without a terminal, and the same task with
   ``run --yes``.
3. Prompt tokens evaluated per step with 4 sessions interleaved on one model, beyond what each
   step added (target <= 32).
4. Peak RSS of a new process whose first step restored the prefix.

Grammar fast-forward (the issue's third figure) is measured by ``bench/bench_fastforward.py``:
decode time per action with fast-forward against bare grammar decoding on the same prompts.

    python bench/bench_latency.py [--model qwen2.5-coder-1.5b] [--reps 3] [--threads N] [--demo-only]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REQUEST = "Turn on do not disturb and set the brightness to 40."


def child(model: str, cache: str | None, threads: int | None) -> dict:
    """One new process: load, first step, then a warm step of the same request."""
    from pocketpilot.contracts import SamplerSettings
    from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
    from pocketpilot.harness.base import ChatMessage, PlanRequest
    from pocketpilot.harness.context import ContextAssembler, ContextBudget
    from pocketpilot.harness.planners import LlamaCppPlanner
    from pocketpilot.harness.planners.prefix_cache import PrefixCache

    async def go() -> dict:
        planner = LlamaCppPlanner(model, sampler=SamplerSettings(temperature=0.0, max_tokens=96), n_threads=threads,
                                  prefix_cache=PrefixCache(Path(cache)) if cache else None)
        t0 = time.perf_counter()
        await planner.load()
        load_s = time.perf_counter() - t0
        tools = SandboxExecutor(SandboxPhone()).tools()
        assembler = ContextAssembler(ContextBudget(tools=6000), planner.count_tokens)
        kinds = ("tool_call", "ask_user", "refuse", "finish")
        prefix, _ = assembler.prefix(tools, kinds)
        request = PlanRequest(messages=assembler.assemble(prefix, ChatMessage(role="user", content=REQUEST), []),
                              tools=tools, kinds=kinds)
        t0 = time.perf_counter()
        first = (await planner.plan(request)).turn
        first_s = time.perf_counter() - t0
        planner._llm.n_tokens = first.prefix_tokens  # keep the prefix: what a warm process has
        t0 = time.perf_counter()
        warm = (await planner.plan(request)).turn
        warm_s = time.perf_counter() - t0
        await planner.aclose()
        return {"load_s": load_s, "first_s": first_s, "warm_s": warm_s, "prefix": first.prefix,
                "prefix_s": first.prefix_s, "prefix_tokens": first.prefix_tokens,
                "first_evaluated": first.prompt_tokens_evaluated, "warm_evaluated": warm.prompt_tokens_evaluated,
                "same_output": first.token_ids == warm.token_ids,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}

    return asyncio.run(go())


def spawn(model: str, cache: str | None, threads: int | None) -> dict:
    """Run :func:`child` in a new process, since a cold start is what is measured.

    Returns:
        The figures the child printed on its last line.
    """
    cmd = [sys.executable, __file__, "--child", "--model", model] + (["--cache", cache] if cache else [])
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def demo_wall(model: str, home: str, *, yes: bool = False) -> float:
    """``pocketpilot demo`` as ``make demo`` runs it without a terminal: the power-off is denied and
    the run stops there. ``yes``: the same task with ``run --yes``, every step allowed.
    """
    env = dict(os.environ, POCKETPILOT_HOME=home)
    verb = ["run", "--task-id", "ordering-parking-note-then-off", "--yes"] if yes else ["demo"]
    cmd = [sys.executable, "-m", "pocketpilot", *verb, "--model", model, "--trace-dir", str(Path(home) / "traces")]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, capture_output=True, check=True, stdin=subprocess.DEVNULL)
    return time.perf_counter() - t0


def demo_figures(model: str, reps: int) -> None:
    """Print the demo's end-to-end wall times: the first run, then ``reps`` runs each way.

    Every run shares one temporary home, so after the first one the caches are filled as a user's would be.
    """
    with tempfile.TemporaryDirectory() as home:
        first = demo_wall(model, home)
        again = [demo_wall(model, home) for _ in range(reps)]
        allowed = [demo_wall(model, home, yes=True) for _ in range(reps)]
    print(f"demo end to end (`pocketpilot demo`, no terminal): first ever {first:.1f} s, then median "
          f"{statistics.median(again):.1f} s (runs {', '.join(f'{t:.1f}' for t in again)})")
    print(f"the same task with `run --yes` (power-off allowed, then a finish step): median "
          f"{statistics.median(allowed):.1f} s (runs {', '.join(f'{t:.1f}' for t in allowed)})")


def interleaved(model: str) -> list[int]:
    """Prompt tokens evaluated beyond what each step added, with sessions interleaved on one model.

    The workload is the KV test's own (``tests/planners/test_session_kv.py``), so the bench measures
    what the test checks.
    """
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "planners"))
    from test_session_kv import REQUESTS, _excess, _interleaved  # the test's own workload

    from pocketpilot.contracts import SamplerSettings
    from pocketpilot.harness.planners import LlamaCppPlanner

    async def go():  # noqa: ANN202
        planner = LlamaCppPlanner(model, sampler=SamplerSettings(temperature=0.0, max_tokens=48), n_ctx=4096)
        try:
            return await _interleaved(planner, REQUESTS)
        finally:
            await planner.aclose()

    return _excess(asyncio.run(go()))


def main() -> None:
    """Print the cold-start table and the demo and interleaving figures; with ``--child``, one child's figures."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--cache", default=None)
    ap.add_argument("--skip-demo", action="store_true")
    ap.add_argument("--demo-only", action="store_true", help="only the demo's end-to-end figures")
    args = ap.parse_args()
    from pocketpilot.models.store import ModelStore

    path, _ = ModelStore().resolve(args.model)
    if args.child:
        print(json.dumps(child(str(path), args.cache, args.threads)))
        return
    print(f"model {path.name}, load average {os.getloadavg()[0]:.2f}, reps {args.reps}")
    if args.demo_only:
        return demo_figures(str(path), args.reps)
    rows: dict[str, list[dict]] = {"no cache": [], "cold cache": [], "restored": []}
    for _ in range(args.reps):
        with tempfile.TemporaryDirectory() as cache:
            rows["no cache"].append(spawn(str(path), None, args.threads))
            rows["cold cache"].append(spawn(str(path), cache, args.threads))
            rows["restored"].append(spawn(str(path), cache, args.threads))
    print("\n| case | first step s | warm step s | first / warm | prefix how | prefix s | evaluated first | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, runs in rows.items():
        first = statistics.median(r["first_s"] for r in runs)
        warm = statistics.median(r["warm_s"] for r in runs)
        print(f"| {name} | {first:.2f} | {warm:.2f} | {first / warm:.2f}x | {runs[0]['prefix']} | "
              f"{statistics.median(r['prefix_s'] for r in runs):.3f} | {runs[0]['first_evaluated']} | "
              f"{max(r['peak_rss_mb'] for r in runs):.0f} |")
    base = statistics.median(r["first_s"] for r in rows["no cache"])
    restored = statistics.median(r["first_s"] for r in rows["restored"])
    print(f"\nrestored first step vs no cache: {restored / base:.2f}x; prefix tokens {rows['restored'][0]['prefix_tokens']}")
    print(f"greedy output identical first vs warm in every run: {all(r['same_output'] for v in rows.values() for r in v)}")
    if not args.skip_demo:
        demo_figures(str(path), args.reps)
    excess = interleaved(str(path))
    print(f"4 interleaved sessions: tokens evaluated beyond what the step added, max {max(excess)} "
          f"(per step {excess})")


if __name__ == "__main__":
    main()
