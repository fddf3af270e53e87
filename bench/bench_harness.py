"""Harness overhead and KV prefix reuse on the real planner (prints figures; not a test).

1. Overhead: one multi-step episode through the harness (context assembly, grammar, tool
   routing, trace writing, log-prob recording), then the *same prompts* replayed as bare
   ``Llama.create_completion`` calls with the same grammar, on the same model instance with the
   KV cache reset before each pass. Repeated ``--reps`` times, alternating. Figure: median of
   per-step (harness / bare) wall-time ratios. Target <= 1.05.
2. Prefix reuse: a 10-step episode (tool calls forced for 9 steps so it cannot stop early):
   prompt tokens evaluated at step k vs the tokens added since step k-1, and the step-10 vs
   step-2 latency ratio. Targets: evaluated <= new + 32; ratio <= 1.5.

    python bench/bench_harness.py [--model qwen2.5-coder-1.5b] [--reps 3] [--task settings-meeting-mode] [--threads N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from pocketpilot.contracts import SamplerSettings
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.planners import LlamaCppPlanner
from pocketpilot.models.store import ModelStore
from pocketpilot.tasks import load_suite, prepare


class Recorder:
    """Passes requests through, remembering the exact prompt and schema of each step."""

    def __init__(self, inner: LlamaCppPlanner, force_tools: int = 0) -> None:
        self.inner, self.force_tools = inner, force_tools
        self.prompts: list[tuple[str, dict]] = []

    @property
    def info(self):
        """The wrapped planner's info, so the trace records the real planner."""
        return self.inner.info

    def count_tokens(self, text):
        """Count with the wrapped planner's tokenizer, so the context budget is the real one."""
        return self.inner.count_tokens(text)

    async def load(self):
        """Load the wrapped planner."""
        await self.inner.load()

    async def plan(self, request):
        """Plan with the wrapped planner and record the prompt and schema it decoded under.

        The first ``force_tools`` steps may only call tools, so the reuse episode cannot stop early.
        """
        if len(self.prompts) < self.force_tools:
            request = request.model_copy(update={"kinds": ("tool_call",)})
        out = await self.inner.plan(request)
        self.prompts.append((self.inner.render(request), self.inner.last_schema))
        return out

    async def aclose(self):
        """Leave the wrapped planner open: the bench reuses one model instance across passes."""
        return None


async def harness_pass(planner, task, steps, force_tools=0):
    """Run ``task`` through the harness for at most ``steps`` steps, the KV cache reset first.

    Returns:
        The episode, and the prompt and schema of each planner call, for the bare replay.
    """
    run = prepare(task)
    rec = Recorder(planner, force_tools)
    planner._llm.reset()
    with tempfile.TemporaryDirectory() as tmp:
        episode = await Session(rec, run.executor, config=HarnessConfig(max_steps=steps), confirm=AllowAll(),
                                verifier=run.verifier, trace_dir=Path(tmp)).run(task.goal)
    return episode, rec.prompts


def bare_pass(planner, prompts):
    """Replay ``prompts`` as bare completions with the same grammar and sampler, the KV cache reset first.

    Returns:
        The wall time of each completion, in seconds.
    """
    llm, s = planner._llm, planner.sampler
    llm.reset()
    times = []
    for prompt, schema in prompts:
        grammar = planner._grammar(schema)
        t0 = time.perf_counter()
        llm.create_completion(prompt, grammar=grammar, max_tokens=s.max_tokens, temperature=s.temperature,
                              top_k=s.top_k, top_p=s.top_p, min_p=s.min_p, repeat_penalty=s.repeat_penalty)
        times.append(time.perf_counter() - t0)
    return times


async def main() -> None:
    """Load the model once, then print the overhead table and the prefix-reuse table.

    One model instance serves every pass, so harness and bare differ only by the harness.
    """
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--task", default="settings-meeting-mode")
    ap.add_argument("--skip-reuse", action="store_true")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: all cores)")
    args = ap.parse_args()
    path, entry = ModelStore().resolve(args.model)
    planner = LlamaCppPlanner(path, sampler=SamplerSettings(max_tokens=200), n_threads=args.threads,
                              sha256=entry.sha256 if entry else None)
    t0 = time.perf_counter()
    await planner.load()
    print(f"model {path.name}: loaded in {time.perf_counter() - t0:.1f}s")
    task = next(t for t in load_suite() if t.id == args.task)

    ratios, rows = [], []
    for rep in range(args.reps):
        episode, prompts = await harness_pass(planner, task, task.max_steps)
        bare = bare_pass(planner, prompts)
        # not strict: a step the harness runs itself has no planner prompt, so the lists may differ
        for step, b in zip(episode.steps, bare, strict=False):
            ratios.append(step.duration_s / b)
            rows.append((rep, step.index + 1, step.duration_s, b))
    print("\n== harness overhead (same prompts, same model instance, KV reset before each pass) ==")
    print("rep step harness_s bare_s ratio")
    for rep, k, h, b in rows:
        print(f"{rep:3} {k:4} {h:9.3f} {b:6.3f} {h / b:5.3f}")
    warm = [h / b for rep, k, h, b in rows if k > 1]
    print(f"median per-step ratio: {statistics.median(ratios):.3f} (all steps), "
          f"{statistics.median(warm):.3f} (warm steps only)  target <= 1.05")

    if args.skip_reuse:
        return
    print("\n== KV prefix reuse over a 10-step episode ==")
    episode, _ = await harness_pass(planner, task, 10, force_tools=9)
    print("step prompt_tok evaluated new_since_prev completion latency_s ok")
    prev = None
    ok_all = True
    for step in episode.steps:
        t = step.planner
        new = t.prompt_tokens - prev.prompt_tokens if prev else t.prompt_tokens
        ok = prev is None or t.prompt_tokens_evaluated <= new + 32
        ok_all &= ok
        print(f"{step.index + 1:4} {t.prompt_tokens:10} {t.prompt_tokens_evaluated:9} {new:14} {t.completion_tokens:10} "
              f"{t.latency_s:9.2f} {'yes' if ok else 'NO'}")
        prev = t
    if len(episode.steps) >= 10:
        s2, s10 = episode.steps[1].planner.latency_s, episode.steps[9].planner.latency_s
        print(f"step-10 / step-2 latency: {s10:.2f}s / {s2:.2f}s = {s10 / s2:.2f}  target <= 1.5")
    print(f"evaluated <= new + 32 at every step: {ok_all}")
    print(json.dumps({"median_ratio": statistics.median(ratios), "steps": len(episode.steps)}))
    await planner.aclose()


if __name__ == "__main__":
    asyncio.run(main())
