"""Rollout throughput with a scripted planner: in-process baseline vs 1 and 2 Ray workers.

    PYTHONPATH=. .venv/bin/python bench/bench_rollout.py [--tasks 8] [--group-size 4] [--repeats 3]

Three figures per configuration: in-process baseline (one event loop, one episode at a time);
Ray "warm" (a RayRolloutPool whose actors are already up, as a trainer keeps it across
iterations); Ray "cold" (collect_ray, actor start inside the timed wall). The local cluster gets
``num_cpus=2`` (this machine's cores).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from pocketpilot.tasks import load_suite
from pocketpilot.trainer_bridge.rollouts import (
    RayRolloutPool,
    ScriptedPlannerFactory,
    collect_local,
    collect_ray,
)


def main() -> None:
    """Print episodes per second in process, and with 1 and 2 Ray workers, warm and cold."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    tasks = load_suite("dev")[: args.tasks]
    n = len(tasks) * args.group_size
    factory = ScriptedPlannerFactory(failure_rate=0.3)
    results: dict[str, list[float]] = {}

    def record(name: str, wall: float) -> None:
        results.setdefault(name, []).append(n / wall)

    for _ in range(args.repeats):
        t0 = time.monotonic()
        asyncio.run(collect_local(tasks, args.group_size, factory, workers=1))
        record("in-process (1 loop)", time.monotonic() - t0)

    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        for workers in (1, 2):
            with RayRolloutPool(factory, workers) as pool:
                pool.wait_ready()
                pool.collect(tasks[:1], 1)  # warm the actors' imports
                for _ in range(args.repeats):
                    t0 = time.monotonic()
                    pool.collect(tasks, args.group_size)
                    record(f"ray warm, {workers} worker(s)", time.monotonic() - t0)
            for _ in range(args.repeats):
                t0 = time.monotonic()
                collect_ray(tasks, args.group_size, factory, workers=workers)
                record(f"ray cold, {workers} worker(s)", time.monotonic() - t0)
    finally:
        ray.shutdown()
    print(f"{len(tasks)} dev tasks x G={args.group_size} = {n} episodes per run, {args.repeats} runs, median episodes/s")
    base = statistics.median(results["in-process (1 loop)"])
    for name, values in results.items():
        med = statistics.median(values)
        one = statistics.median(results[name.replace("2 worker", "1 worker")]) if "ray" in name else med
        print(f"  {name:<26} {med:7.2f} ep/s   x{med / base:4.2f} vs in-process   x{med / one:4.2f} vs same mode, 1 worker")


if __name__ == "__main__":
    main()
