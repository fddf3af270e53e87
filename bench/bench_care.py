"""CARE advantage computation: time for 1M rollouts in groups of 8 vs plain GRPO normalization.

Usage::

    python bench/bench_care.py [--rollouts 1000000] [--group-size 8] [--repeats 7]

Data: synthetic groups with per-task success probabilities spread over [0, 1] so all three
regimes occur (printed), verified progress in [0, 1], cost ~ tokens. Both timings include
input validation and run in this process on the same arrays; figures are medians.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.trainer_bridge.care import Regime, compute_care, grpo_advantages  # noqa: E402
from pocketpilot.trainer_bridge.care_config import CareConfig  # noqa: E402


def median_s(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    """Median wall time of ``fn`` over ``repeats`` calls, after one call that is not timed.

    The untimed call keeps first-call costs (allocation, caches) out of the figure.
    """
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    """Time plain GRPO normalisation and CARE on the same synthetic rollouts, and print both.

    The regime occupancy is printed first, so a reader sees that all three regimes were exercised.
    """
    ap = argparse.ArgumentParser()
    ap.add_argument("--rollouts", type=int, default=1_000_000)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    g = args.group_size
    n = args.rollouts - args.rollouts % g
    rng = np.random.default_rng(0)
    p_task = np.repeat(rng.random(n // g), g)
    success = (rng.random(n) < p_task).astype(np.float64)
    progress = np.where(success == 1.0, 1.0, rng.random(n))
    cost = rng.integers(50, 800, n).astype(np.float64)
    config = CareConfig()
    rewards = success.copy()

    res = compute_care(success, progress, cost, group_size=g, config=config)
    occ = res.occupancy()
    print(f"== {n:,} rollouts in groups of {g} ({n // g:,} groups), numpy {np.__version__}")
    print("regime occupancy: " + ", ".join(f"{r.name.lower()} {occ[r]:.2f}" for r in Regime)
          + f"; floored groups {res.floored.mean():.2f}")

    t_plain = median_s(lambda: grpo_advantages(rewards, group_size=g), args.repeats)
    t_care = median_s(lambda: compute_care(success, progress, cost, group_size=g, config=config), args.repeats)
    print(f"plain GRPO normalization (baseline): {t_plain * 1000:8.1f} ms median of {args.repeats}")
    print(f"CARE rewards + advantages:           {t_care * 1000:8.1f} ms median of {args.repeats}")
    print(f"ratio CARE / plain: {t_care / t_plain:.2f}x; CARE throughput {n / t_care / 1e6:.1f} M rollouts/s")


if __name__ == "__main__":
    main()
