"""Issue 36's `pocketpilot evolve` figures: one iteration on the generated suite, and two on a team's own world.

``suite``: the timing target (one iteration, 60 dev + 40 evolve, the 1.5B planner), on the
committed generated suite (its MANIFEST.yml carries the split index, so the test split is never
opened)::

    flock /work/runs/model.lock .venv/bin/python bench/bench_evolve.py suite

``team``: a tool module written outside the project (here: written at run time into a temporary
folder, never imported from pocketpilot), tasks generated from it with ``pocketpilot tasks
generate``, then ``pocketpilot evolve`` for two iterations; the figures are reported even if flat::

    flock /work/runs/model.lock .venv/bin/python bench/bench_evolve.py team

Both resume: run the same command again after a kill. Each prints the per-iteration table,
writes it to ``OUT/report.md`` and prints the load average; ``--out`` moves the state folder.

The decode memo (``OUT/decode-memo.jsonl``) is on, as in ``pocketpilot evolve``; ``--no-decode-memo``
times the same iteration without it (use another ``--out``: a folder keeps the memo it has)::

    flock /work/runs/model.lock .venv/bin/python bench/bench_evolve.py suite --out /tmp/evolve-memo
    flock /work/runs/model.lock .venv/bin/python bench/bench_evolve.py suite --out /tmp/evolve-nomemo --no-decode-memo
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "pocketpilot"]

KENNEL = Path(__file__).resolve().parent / "kennel_app.py"
"""The team's tool module (shared with the evolve tests), copied outside the project for each run."""


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    print("$", " ".join(cmd), flush=True)  # noqa: T201 (a bench script prints its figures)
    subprocess.run(cmd, check=True, cwd=ROOT, env=env)


def _evolve(tasks: Path, out: Path, args: argparse.Namespace, iterations: int) -> None:
    t0 = time.monotonic()
    _run([*CLI, "evolve", "--tasks", str(tasks), "--out", str(out), "--iterations", str(iterations),
          "--dev-sample", str(args.dev_sample), "--evolve-sample", str(args.evolve_sample),
          "--max-candidates", str(args.max_candidates), "--model", args.model, "--auto-approve",
          *(["--no-decode-memo"] if args.no_decode_memo else [])])
    print(f"wall {time.monotonic() - t0:.0f}s, load average {os.getloadavg()[0]:.2f}")  # noqa: T201


def main(argv: list[str] | None = None) -> int:
    """Run one of the two checks (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("which", choices=["suite", "team"])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--dev-sample", type=int, default=None)
    parser.add_argument("--evolve-sample", type=int, default=None)
    parser.add_argument("--max-candidates", type=int, default=4)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--no-decode-memo", action="store_true",
                        help="decode every step again (the time an iteration takes without the memo)")
    args = parser.parse_args(argv)
    results = ROOT / "bench" / "results"
    if args.which == "suite":
        args.dev_sample = args.dev_sample or 60
        args.evolve_sample = args.evolve_sample or 40
        _evolve(ROOT / "pocketpilot" / "tasks" / "suite", args.out or results / "evolve-suite", args, 1)
        return 0
    args.dev_sample = args.dev_sample or 20
    args.evolve_sample = args.evolve_sample or 12
    out = args.out or results / "evolve-team"
    outside = Path(tempfile.gettempdir()) / "pocketpilot-evolve-team"  # outside the project, kept for a resume
    module_dir, tasks = outside / "module", outside / "tasks"
    module_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(KENNEL, module_dir / "kennel_app.py")
    if not (tasks / "MANIFEST.yml").exists():
        env = {**os.environ, "PYTHONPATH": str(module_dir)}
        _run([*CLI, "tasks", "generate", "--world", "kennel_app:WORLD", "--count", "200", "--seed", "1",
              "--prefix", "kennel-", "--out", str(tasks)], env=env)
        shutil.copyfile(KENNEL, tasks / "kennel_app.py")  # the folder a team hands over
    _evolve(tasks, out, args, 2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
