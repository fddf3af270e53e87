"""Export throughput (steps/s): synthetic episodes → SFT and RL rows → JSONL and Parquet.

Baseline in the same run: ``episode.model_dump_json()`` of every episode written as JSONL (the
raw trace volume), so the ratios show what building masks/groups and Arrow encoding cost.

    PYTHONPATH=. .venv/bin/python bench/bench_export.py --episodes 2000 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pocketpilot.trainer_bridge.export_io import write_jsonl, write_rows
from pocketpilot.trainer_bridge.export_rl import rl_groups
from pocketpilot.trainer_bridge.export_sft import sft_record
from pocketpilot.trainer_bridge.export_synthetic import synthetic_episode


def main() -> None:
    """Print each case's median time, steps/s and time against the raw-trace baseline.

    The baseline runs first, in the same process on the same episodes, so the ratios compare like with like.
    """
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    episodes = [synthetic_episode(i) for i in range(args.episodes)]
    steps = sum(len(e.steps) for e in episodes)
    out = Path(tempfile.mkdtemp(prefix="bench_export."))
    cases = {
        "baseline raw trace JSONL": lambda: write_jsonl(({"e": e.model_dump_json()} for e in episodes), out / "raw.jsonl"),
        "SFT JSONL": lambda: write_rows((sft_record(e).row() for e in episodes), out / "sft.jsonl", "sft"),
        "SFT Parquet": lambda: write_rows((sft_record(e).row() for e in episodes), out / "sft.parquet", "sft"),
        "RL JSONL": lambda: write_rows((g.row() for g in rl_groups(episodes)), out / "rl.jsonl", "rl"),
        "RL Parquet": lambda: write_rows((g.row() for g in rl_groups(episodes)), out / "rl.parquet", "rl"),
    }
    print(f"{args.episodes} episodes, {steps} steps, median of {args.repeats}", file=sys.stderr)
    base = None
    print("| case | median s | steps/s | vs baseline |\n|---|---|---|---|")
    for name, fn in cases.items():
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        base = base or med
        print(f"| {name} | {med:.3f} | {steps / med:,.0f} | {med / base:.2f}x time |")


if __name__ == "__main__":
    main()
