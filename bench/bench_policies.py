"""Policy overhead per step (prints figures; not a test).

The harness's interventions are policies asked before each call, after each step and on each
stop action. This measures what they cost a step, two ways, in one run:

1. The time spent inside policy hooks: every policy of the default set is wrapped in a timing
   proxy, a scripted sandbox episode (reads, settings, a created note, a gated cast, a repeat
   the loop guard notices, a failure) runs under the bundled kit's gates, and the hook time is
   divided by the steps. Median and p95 over episodes.
2. The same episode end to end per step, with the default set and with the safety set only
   (bare mode), alternating: median per-step wall time of each, their difference and ratio.

Target: at most 1 ms of policy time per step.

    python bench/bench_policies.py [--episodes 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from typing import Any

from pocketpilot.evaluation.compare import load_harness_kit
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, Session, default_policies, safety_policies
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.policies import BasePolicy, Policy

REQUEST = "Read my settings, turn wifi off, note the packing list, then cast to the living room TV."
SCRIPT: list[dict[str, Any]] = [
    {"kind": "tool_call", "calls": [{"name": "get_settings", "arguments": {}}]},
    {"kind": "tool_call", "calls": [{"name": "set_wifi", "arguments": {"enabled": False}}]},
    {"kind": "tool_call", "calls": [{"name": "create_note", "arguments": {"title": "Packing list", "body": "passport"}}]},
    {"kind": "tool_call", "calls": [{"name": "read_note", "arguments": {"note_id": "nope"}}]},
    {"kind": "tool_call", "calls": [{"name": "get_cast_status", "arguments": {}},
                                    {"name": "start_cast", "arguments": {"target": "Living Room TV"}}]},
    {"kind": "tool_call", "calls": [{"name": "get_cast_status", "arguments": {}}]},
    {"kind": "tool_call", "calls": [{"name": "get_cast_status", "arguments": {}}]},
    {"kind": "refuse", "reason": "not sure"},
    {"kind": "finish", "summary": "done"},
]


class Timed(BasePolicy):
    """A proxy that adds the wrapped policy's hook time to a shared clock."""

    def __init__(self, inner: Policy, clock: list[float]) -> None:
        super().__init__()
        self.inner, self.clock = inner, clock
        self.name = inner.name  # type: ignore[misc]

    def fork(self) -> Timed:
        """A proxy of the wrapped policy's fork, on the same clock."""
        return Timed(self.inner.fork(), self.clock)

    def params(self) -> dict[str, Any]:
        """The wrapped policy's parameters, so the trace records the real policy."""
        return self.inner.params()

    async def before_call(self, call, spec, batch, run):  # type: ignore[no-untyped-def]
        """The wrapped policy's hook, its time added to the clock."""
        t0 = time.perf_counter()
        try:
            return await self.inner.before_call(call, spec, batch, run)
        finally:
            self.clock[0] += time.perf_counter() - t0

    def after_step(self, report, run):  # type: ignore[no-untyped-def]
        """The wrapped policy's hook, its time added to the clock."""
        t0 = time.perf_counter()
        try:
            return self.inner.after_step(report, run)
        finally:
            self.clock[0] += time.perf_counter() - t0

    def on_stop(self, action, run):  # type: ignore[no-untyped-def]
        """The wrapped policy's hook, its time added to the clock."""
        t0 = time.perf_counter()
        try:
            return self.inner.on_stop(action, run)
        finally:
            self.clock[0] += time.perf_counter() - t0


async def _episode(policies: Sequence[Policy], kit: Any) -> tuple[float, int]:
    phone = SandboxPhone()
    executor = SandboxExecutor(phone)
    kw = kit.session_kwargs([t.name for t in executor.tools()], request=REQUEST)
    kw.pop("policies", None)
    session = Session(ScriptedPlanner(list(SCRIPT)), executor, confirm=AllowAll(), policies=policies, **kw)
    t0 = time.perf_counter()
    episode = await session.run(REQUEST)
    return time.perf_counter() - t0, len(episode.steps)


def _p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, int(len(xs) * 0.95) - 1)]


async def main(episodes: int) -> None:
    """Run ``episodes`` rounds of three episodes and print the hook time and the step wall times.

    The timed, default-set and safety-only episodes alternate within a round, so drift on a shared CPU hits all alike.
    """
    kit = load_harness_kit()
    hook_ms, full_ms, bare_ms = [], [], []
    for _ in range(episodes):
        clock = [0.0]
        timed = [Timed(p, clock) for p in default_policies()]
        wall, steps = await _episode(timed, kit)
        hook_ms.append(clock[0] * 1000 / steps)
        wall_full, steps_full = await _episode(default_policies(), kit)
        full_ms.append(wall_full * 1000 / steps_full)
        wall_bare, steps_bare = await _episode(safety_policies(), kit)
        bare_ms.append(wall_bare * 1000 / steps_bare)
    hook, full, bare = statistics.median(hook_ms), statistics.median(full_ms), statistics.median(bare_ms)
    print(f"episodes: {episodes}, steps per episode (default set): {steps}")
    print(f"policy hook time per step:  median {hook:.3f} ms  p95 {_p95(hook_ms):.3f} ms  (target <= 1 ms)")
    print(f"step wall time, default set: median {full:.3f} ms")
    print(f"step wall time, safety only: median {bare:.3f} ms")
    print(f"difference {full - bare:+.3f} ms per step, ratio {full / bare:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=40)
    asyncio.run(main(parser.parse_args().episodes))
