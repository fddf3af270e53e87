"""Scenario Adapter cost per step (prints figures; not a test).

What the adapter adds to a step is the per-request filtering of η's guidance to the exposed
tools and configured resources (plus, once per session, the always-on gate selection). Measured:

1. ``GuidanceFilter.guidance`` over every sandbox tool (37) with all resources, and over one
   app's tools: median and p95 per call.
2. ``session_kwargs`` (filtering + gate selection + the library check), once per session.
3. The same scripted 6-step sandbox episode run with and without η (guidance + always-on gates),
   alternating, median per-step wall time of each and their difference and ratio: the whole cost
   the adapter's configuration brings to a step (longer prefix to assemble, gates to check).

Target: filtering adds <= 5 ms per step.

    python bench/bench_adapter.py [--reps 200] [--episodes 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from pocketpilot.adapters import GuidanceFilter, compile_eta, sandbox_tool_apps, session_kwargs
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.skills import SkillLibrary

SCRIPT = [
    {"kind": "tool_call", "calls": [{"name": "get_settings", "arguments": {}}]},
    {"kind": "tool_call", "calls": [{"name": "set_wifi", "arguments": {"enabled": False}}]},
    {"kind": "tool_call", "calls": [{"name": "get_cast_status", "arguments": {}}]},
    {"kind": "tool_call", "calls": [{"name": "start_cast", "arguments": {"target": "Living Room TV"}}]},
    {"kind": "tool_call", "calls": [{"name": "create_note", "arguments": {"title": "t", "body": "b"}}]},
    {"kind": "finish", "summary": "done"},
]


def _timeit(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _p95(xs: list[float]) -> float:
    return sorted(xs)[int(0.95 * (len(xs) - 1))]


async def _episode(eta, lib, with_eta: bool) -> float:
    executor = SandboxExecutor(SandboxPhone())
    names = [t.name for t in executor.tools()]
    kw = session_kwargs(eta, names, library=lib, memory=True) if with_eta else {}
    session = Session(ScriptedPlanner(SCRIPT), executor, confirm=AllowAll(), **kw)
    t0 = time.perf_counter()
    episode = await session.run("turn wifi off, cast to the TV, write a note")
    assert episode.stop_reason == "finish"
    return (time.perf_counter() - t0) * 1000 / len(episode.steps)


def main() -> None:
    """Print the filter's cost per call and per session, then η's cost per step of a scripted episode.

    Episodes with and without η alternate, so drift on a shared CPU hits both alike.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--episodes", type=int, default=30)
    args = parser.parse_args()

    lib = SkillLibrary.builtin()
    tools, apps = sandbox_tool_apps()
    eta = compile_eta(tools, lib, apps=apps)
    filt = GuidanceFilter(eta)
    every = [t.name for t in tools]
    cast = eta.app_tools("cast")
    res = ["memory", "skills", "delegate"]
    print(f"η {eta.version}: {len(eta.tools)} tools, {len(eta.skills)} skills, {len(eta.notes)} notes")

    all_ms = _timeit(lambda: filt.guidance(every, res), args.reps)
    one_ms = _timeit(lambda: filt.guidance(cast, res), args.reps)
    kw_ms = _timeit(lambda: session_kwargs(eta, every, library=lib, memory=True, guidance_filter=filt), args.reps)
    print(f"filter, {len(every)} tools:     median {statistics.median(all_ms):.4f} ms  p95 {_p95(all_ms):.4f} ms")
    print(f"filter, {len(cast)} tools (cast): median {statistics.median(one_ms):.4f} ms  p95 {_p95(one_ms):.4f} ms")
    print(f"session_kwargs (per session):  median {statistics.median(kw_ms):.4f} ms  p95 {_p95(kw_ms):.4f} ms")

    base, with_eta = [], []
    for _ in range(args.episodes):  # alternate so drift in a shared CPU hits both alike
        base.append(asyncio.run(_episode(eta, lib, False)))
        with_eta.append(asyncio.run(_episode(eta, lib, True)))
    b, w = statistics.median(base), statistics.median(with_eta)
    print(f"scripted step, bare harness:   median {b:.3f} ms")
    print(f"scripted step, under η:        median {w:.3f} ms  (+{w - b:.3f} ms, ratio {w / b:.3f})")
    added = statistics.median(all_ms)
    verdict = "meets" if added <= 5.0 else "MISSES"
    print(f"adapter filtering per step: {added:.4f} ms -> {verdict} the <= 5 ms target")


if __name__ == "__main__":
    main()
