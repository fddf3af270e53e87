r"""A step deep in a long context against the same step in a short one (not a test).

The target (issue 35): a step at >= 8k tokens of context takes at most 2x the same step at
1-2k, with the same new tokens. For each llama.cpp setting (flash attention on/off, KV cache
type), two contexts are built from a dev task's first-step request (its rules and tools, then
filler turns of tool calls and results until the context holds ``--short`` or ``--long``
tokens); the measured step appends the same assistant turn and the same tool result to each
and decodes the next action under the grammar. Before every repetition the KV cache is cut
back to the end of the context, so each repetition evaluates exactly the new tokens.

Reports per setting and context: new tokens evaluated, tokens generated, the median step
time (prompt evaluation + decoding) and each part, the long/short ratio, and whether greedy
output is identical across repetitions and to the default setting's (``fa0-f16``).

    flock /work/runs/model.lock python bench/bench_long_context.py --model qwen2.5-coder-1.5b \
        --settings fa0-f16,fa1-f16,fa1-q8_0 --reps 3 --threads 2 --out long_context.json
"""

# ruff: noqa: T201 - a bench script prints its report

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

TASK = "settings-meeting-mode"  # a dev task of the bundled suite (its first step's rules and tools)
WORDS = ("alpha", "brook", "cedar", "delta", "ember", "fjord", "grove", "harbor", "iris", "juniper", "kestrel",
         "lumen", "meadow", "nectar", "orchid", "pebble", "quartz", "raven", "sierra", "tundra")
NEW_RESULT_WORDS = 170  # the measured step's tool result: about 240 tokens with its JSON


def parse_setting(text: str) -> tuple[bool, str]:
    """``fa1-q8_0`` -> (flash attention on, KV type q8_0)."""
    fa, _, kv = text.partition("-")
    if fa not in ("fa0", "fa1") or not kv:
        raise SystemExit(f"a setting is fa0|fa1-KVTYPE (e.g. fa1-q8_0), not {text!r}")
    return fa == "fa1", kv


async def base_request() -> Any:
    """The first-step request the harness assembles for the dev task (scripted, no model)."""
    from pocketpilot.evaluation.compare import run_task
    from pocketpilot.harness.planners import ScriptedPlanner
    from pocketpilot.tasks import load_suite
    from pocketpilot.tasks.oracle import oracle_actions

    task = next(t for t in load_suite("dev") if t.id == TASK)
    scripted = ScriptedPlanner(oracle_actions(task))
    await run_task(task, scripted, mode="harness")
    return scripted.requests[0]


def _turn(i: int, tools: list[str]) -> tuple[str, str]:
    name = tools[i % len(tools)]
    words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(24))
    call = json.dumps({"kind": "tool_call", "calls": [{"name": name, "arguments": {}}]}, separators=(",", ":"))
    result = json.dumps({"results": [{"ok": True, "data": {"entry": i, "note": f"record {i}: {words}"}}]})
    return call, result


def contexts(request: Any, count: Any, targets: dict[str, int]) -> dict[str, tuple[Any, Any]]:
    """Per target: the context request (A), and the measured step's request (B = A + the same new turn)."""
    from pocketpilot.contracts import ChatMessage

    tools = [t.name for t in request.tools]
    base = list(request.messages)
    words = " ".join(WORDS[(k * 3) % len(WORDS)] for k in range(NEW_RESULT_WORDS))
    new_call = json.dumps({"kind": "tool_call", "calls": [{"name": tools[0], "arguments": {}}]}, separators=(",", ":"))
    new_result = json.dumps({"results": [{"ok": True, "data": {"note": words}}]})
    out = {}
    for label, target in targets.items():
        messages = list(base)
        i = 0
        while count(messages) < target:
            call, result = _turn(i, tools)
            messages += [ChatMessage(role="assistant", content=call), ChatMessage(role="tool", content=result)]
            i += 1
        a = request.model_copy(update={"messages": messages})
        b = request.model_copy(update={"messages": [*messages, ChatMessage(role="assistant", content=new_call),
                                                    ChatMessage(role="tool", content=new_result)]})
        out[label] = (a, b)
    return out


async def measure(args: argparse.Namespace, setting: str, request: Any) -> dict[str, Any]:
    """Every context's measured step under one setting, ``--reps`` times."""
    from pocketpilot.contracts import SamplerSettings
    from pocketpilot.harness.planners import LlamaCppPlanner
    from pocketpilot.models.store import ModelStore

    flash, kv = parse_setting(setting)
    path, entry = ModelStore().resolve(args.model)
    planner = LlamaCppPlanner(path, sampler=SamplerSettings(temperature=0.0, max_tokens=args.max_tokens),
                              n_ctx=args.n_ctx, n_threads=args.threads, prefix_cache=False, flash_attn=flash,
                              kv_type=kv, sha256=entry.sha256 if entry else None)
    t0 = time.monotonic()
    await planner.load()
    load_s = time.monotonic() - t0

    def count(messages: list[Any]) -> int:
        return planner.count_tokens(planner.render(request.model_copy(update={"messages": messages})))

    result: dict[str, Any] = {"setting": setting, "load_s": load_s, "contexts": {}}
    try:
        for label, (a, b) in contexts(request, count, {"short": args.short, "long": args.long}).items():
            t0 = time.monotonic()
            await planner.plan(a)  # fills the cache with the context (not measured)
            fill_s = time.monotonic() - t0
            n_a = planner.count_tokens(planner.render(a))
            reps = []
            for _ in range(args.reps):
                llm = planner._llm
                llm.n_tokens = min(llm.n_tokens, n_a - 1)  # back to the end of the context: only the new turn is new
                out = await planner.plan(b)
                t = out.turn
                reps.append({"latency_s": t.latency_s, "decode_s": t.decode_s, "eval_s": t.latency_s - t.decode_s,
                             "new_tokens": t.prompt_tokens_evaluated, "generated": t.completion_tokens,
                             "context_tokens": t.prompt_tokens, "raw": t.raw, "token_ids": t.token_ids})
                print(f"  {setting:10} {label:5} ctx={t.prompt_tokens} new={t.prompt_tokens_evaluated} "
                      f"gen={t.completion_tokens} step={t.latency_s:.2f}s (eval {t.latency_s - t.decode_s:.2f}s, "
                      f"decode {t.decode_s:.2f}s)", flush=True)
            result["contexts"][label] = {
                "context_tokens": reps[0]["context_tokens"], "fill_s": fill_s,
                "new_tokens": reps[0]["new_tokens"], "generated": reps[0]["generated"],
                "step_s": statistics.median(r["latency_s"] for r in reps),
                "eval_s": statistics.median(r["eval_s"] for r in reps),
                "decode_s": statistics.median(r["decode_s"] for r in reps),
                "reproducible": all(r["token_ids"] == reps[0]["token_ids"] for r in reps),
                "raw": reps[0]["raw"], "token_ids": reps[0]["token_ids"],
            }
    finally:
        await planner.aclose()
    return result


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """A Markdown table: per setting, short and long medians, their ratio, and output identity."""
    base = results[0]["contexts"]
    lines = [
        f"model {args.model}, n_ctx {args.n_ctx}, threads {args.threads or 'all'}, reps {args.reps}, "
        f"load average {os.getloadavg()[0]:.2f}",
        "",
        "| setting | short ctx | long ctx | new tok | gen tok short/long | step s short | step s long | long/short "
        "| eval s long | decode s long | same output as " + results[0]["setting"] + " | reps identical |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        s, lg = r["contexts"]["short"], r["contexts"]["long"]
        same = all(r["contexts"][k]["token_ids"] == base[k]["token_ids"] for k in ("short", "long"))
        lines.append(
            f"| {r['setting']} | {s['context_tokens']} | {lg['context_tokens']} | {s['new_tokens']}/{lg['new_tokens']} "
            f"| {s['generated']}/{lg['generated']} | {s['step_s']:.2f} | {lg['step_s']:.2f} | "
            f"{lg['step_s'] / s['step_s']:.2f}x | {lg['eval_s']:.2f} | {lg['decode_s']:.2f} | "
            f"{'yes' if same else 'no'} | {'yes' if s['reproducible'] and lg['reproducible'] else 'no'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, measure every setting, print the table (and write the JSON with ``--out``)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="default")
    parser.add_argument("--settings", default="fa0-f16,fa1-f16,fa1-q8_0",
                        help="comma-separated fa0|fa1-KVTYPE; the first is the reference for output identity")
    parser.add_argument("--short", type=int, default=1500, help="context tokens of the short step")
    parser.add_argument("--long", type=int, default=8000, help="context tokens of the long step")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--n-ctx", type=int, default=10240)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    request = asyncio.run(base_request())
    results = []
    for setting in args.settings.split(","):
        results.append(asyncio.run(measure(args, setting.strip(), request)))
    print()
    print(report(results, args))
    if args.out:
        args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "load_average": os.getloadavg(),
                                        "results": results}, indent=1))
        print(f"\nwritten: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
