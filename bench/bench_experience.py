"""Experience library: what dev oracle runs distil into, and the per-step cost of showing it (prints figures; not a test).

1. Every dev task with an oracle is run through the harness with a scripted planner that
   replays the oracle (no model); the verified episodes are distilled
   (:func:`pocketpilot.trainer_bridge.distil.distil`): runs, entries, merges.
2. For every evolve task's request, the adapter's experience step is timed: retrieval over
   the library plus rendering (``with_experience`` then one ``guidance_for`` call), and the
   rendered section's size in estimated prompt tokens (characters / 3.5; pass ``--model``
   to count with the planner's tokenizer).

3. With ``--ab N --model M`` (N <= 5; it loads a model, so run it under
   ``flock /work/runs/model.lock``): the first N evolve tasks, run by the real planner with
   the default η and with the same η plus the distilled library, paired by task.

Targets (issue 36): <= 30 ms per step and <= 800 prompt tokens by default.

    python bench/bench_experience.py [--limit 40] [--model PATH.gguf] [--ab 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from pocketpilot.adapters import Eta, session_kwargs
from pocketpilot.adapters.examples import with_experience
from pocketpilot.evaluation.task_episode import load_harness_kit, run_task_episode
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions, prepare
from pocketpilot.trainer_bridge.distil import distil


async def _dev_episodes(limit: int) -> list:
    kit = load_harness_kit()
    out = []
    for task in [t for t in load_suite("dev") if t.oracle][:limit]:
        episode, _ = await run_task_episode(task, ScriptedPlanner(oracle_actions(task)), kit=kit)
        out.append(episode)
    return out


def main() -> None:
    """Run the dev oracle replays, distil them, and time the experience step on the evolve requests."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=40, help="dev tasks to run (oracle replays, no model)")
    ap.add_argument("--model", help="a GGUF whose tokenizer counts the tokens (run under flock /work/runs/model.lock)")
    ap.add_argument("--ab", type=int, default=0, help="evolve tasks to run with and without experience (<= 5; needs --model)")
    args = ap.parse_args()
    if args.ab and (args.ab > 5 or not args.model):
        ap.error("--ab takes at most 5 tasks and needs --model")
    t0 = time.perf_counter()
    episodes = asyncio.run(_dev_episodes(args.limit))
    passed = [e for e in episodes if e.verdict and e.verdict.success]
    entries = distil(passed)
    print(f"dev oracle runs: {len(episodes)} ({len(passed)} verified) in {time.perf_counter() - t0:.1f}s")
    print(f"experience entries: {len(entries)} (merged from {sum(len(e.provenance) for e in entries)} runs); "
          f"shareable {sum(e.shareable for e in entries)}; with recoveries {sum(bool(e.recoveries) for e in entries)}")
    count = lambda text: len(text) / 3.5  # noqa: E731
    planner = None
    if args.model:
        from pocketpilot.harness.planners import LlamaCppPlanner

        planner = LlamaCppPlanner(args.model)
        asyncio.run(planner.load())
        count = planner.count_tokens
    kit = load_harness_kit()
    eta: Eta = kit.eta.model_copy(update={"experience": entries})
    times, tokens, shown = [], [], 0
    for task in load_suite("evolve"):
        run = prepare(task, memory=False)
        try:
            specs = run.executor.tools()
            names = [s.name for s in specs]
            plain = session_kwargs(kit.eta, specs, library=kit.library, request=task.goal)
            base = plain["guidance_for"](names)
            t1 = time.perf_counter()  # the experience part alone: retrieval, rendering, the hint policy
            kw = with_experience(eta, plain, task.goal, names)
            guidance = kw["guidance_for"](names)
            times.append((time.perf_counter() - t1) * 1000)
        finally:
            run.close()
        extra = [g for g in guidance if g not in base]
        if extra:
            shown += 1
            tokens.append(sum(count(g) for g in extra))
    print(f"evolve requests: {len(times)}; with examples shown: {shown}")
    if times:
        q = statistics.quantiles(times, n=20) if len(times) > 1 else times
        print(f"experience per request (retrieve + render + hint policy): median {statistics.median(times):.2f} ms, "
              f"p95 {q[-1]:.2f} ms, max {max(times):.2f} ms (target <= 30 ms)")
    if tokens:
        print(f"examples section: median {statistics.median(tokens):.0f} tokens, max {max(tokens):.0f} (target <= 800)")
    if args.ab and planner is not None:
        asyncio.run(_ab(planner, kit, eta, args.ab))


async def _ab(planner: object, kit: object, eta: Eta, n: int) -> None:
    """The first ``n`` evolve tasks with the default η and with η plus experience, paired by task."""
    from pocketpilot.evaluation.task_episode import HarnessKit

    learned = HarnessKit(kit.library, eta=eta)  # type: ignore[attr-defined]
    wins = {"default": 0, "experience": 0}
    for task in load_suite("evolve")[:n]:
        row = []
        for label, k in (("default", kit), ("experience", learned)):
            t0 = time.perf_counter()
            episode, _ = await run_task_episode(task, planner, kit=k)  # type: ignore[arg-type]
            ok = bool(episode.verdict and episode.verdict.success)
            wins[label] += ok
            row.append(f"{label} {'pass' if ok else 'FAIL'} ({len(episode.steps)} steps, {time.perf_counter() - t0:.0f}s)")
        print(f"{task.id}: " + "; ".join(row))
    print(f"evolve {n} tasks: default {wins['default']}/{n}, with experience {wins['experience']}/{n}")


if __name__ == "__main__":
    main()
