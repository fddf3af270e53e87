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
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "pocketpilot"]

KENNEL = '''
"""A dog-boarding team's kennel app, written outside pocketpilot."""

from typing import Any, Literal

from pydantic import BaseModel, Field

from pocketpilot.errors import ToolFailure
from pocketpilot.executor.tools import tool


class Booking(BaseModel):
    id: str
    title: str
    body: str = ""


class KennelState(BaseModel):
    heating: bool = False
    feeding: Literal["off", "morning", "twice"] = "morning"
    bookings: list[Booking] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)
    next_id: int = 1


class Kennel:
    """Heating, the feeding plan, bookings and messages to owners."""

    name = "kennel"

    def __init__(self, state: KennelState) -> None:
        self.state = state

    @tool(effect="read", idempotent=True)
    async def kennel_status(self) -> dict[str, Any]:
        """Read the heating, the feeding plan and the bookings."""
        return {"heating": self.state.heating, "feeding": self.state.feeding,
                "bookings": [b.model_dump() for b in self.state.bookings]}

    @tool(effect="setting", setting="heating", idempotent=True)
    async def set_heating(self, on: bool) -> dict[str, Any]:
        """Switch the kennel heating on or off.

        Args:
            on: True for on.
        """
        self.state.heating = on
        return {"heating": on}

    @tool(effect="setting", setting="feeding", idempotent=True)
    async def set_feeding(self, plan: Literal["off", "morning", "twice"]) -> dict[str, Any]:
        """Set the feeding plan.

        Args:
            plan: off, morning or twice.
        """
        self.state.feeding = plan
        return {"feeding": plan}

    @tool(effect="create", name_arg="title", idempotent=False)
    async def book_stay(self, title: str = Field(min_length=1), body: str = "") -> dict[str, Any]:
        """Book a stay and return its id.

        Args:
            title: The dog's name.
            body: Notes for the staff.
        """
        booking = Booking(id=f"stay-{self.state.next_id}", title=title, body=body)
        self.state.bookings = [*self.state.bookings, booking]
        self.state.next_id += 1
        return {"id": booking.id}

    @tool(effect="send", destructive=True, open_world=True)
    async def message_owner(self, text: str = Field(min_length=1, max_length=500)) -> dict[str, Any]:
        """Send a message to the dog owners.

        Args:
            text: What it says.
        """
        self.state.messages = [*self.state.messages, text]
        return {"sent": len(self.state.messages)}

    @tool(effect="delete", destructive=True, id_arg="stay_id", idempotent=True)
    async def cancel_stay(self, stay_id: str) -> dict[str, Any]:
        """Cancel a stay by id.

        Args:
            stay_id: The stay id.
        """
        if not any(b.id == stay_id for b in self.state.bookings):
            raise ToolFailure("not_found", f"no stay {stay_id!r}")
        self.state.bookings = [b for b in self.state.bookings if b.id != stay_id]
        return {"cancelled": stay_id}


WORLD = {
    "apps": ["kennel_app:Kennel"],
    "state_model": "kennel_app:KennelState",
    "initial_state": {"bookings": [{"id": "stay-1", "title": "Rex", "body": "two nights"}], "next_id": 2},
    "sandbox": False,
}
'''


def _run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    print("$", " ".join(cmd), flush=True)  # noqa: T201 (a bench script prints its figures)
    subprocess.run(cmd, check=True, cwd=ROOT, env=env)


def _evolve(tasks: Path, out: Path, args: argparse.Namespace, iterations: int) -> None:
    t0 = time.monotonic()
    _run([*CLI, "evolve", "--tasks", str(tasks), "--out", str(out), "--iterations", str(iterations),
          "--dev-sample", str(args.dev_sample), "--evolve-sample", str(args.evolve_sample),
          "--max-candidates", str(args.max_candidates), "--model", args.model, "--auto-approve"])
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
    (module_dir / "kennel_app.py").write_text(KENNEL, encoding="utf-8")
    if not (tasks / "MANIFEST.yml").exists():
        env = {**os.environ, "PYTHONPATH": str(module_dir)}
        _run([*CLI, "tasks", "generate", "--world", "kennel_app:WORLD", "--count", "200", "--seed", "1",
              "--prefix", "kennel-", "--out", str(tasks)], env=env)
        (tasks / "kennel_app.py").write_text(KENNEL, encoding="utf-8")  # the folder a team hands over
    _evolve(tasks, out, args, 2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
