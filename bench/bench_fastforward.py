"""Grammar fast-forward against bare grammar decoding, on recorded prompts (not a test).

Side by side in one run, on the same planner and the same KV state for every prompt:

1. ``gbnf``: llama.cpp's grammar sampler, one token per pass (the baseline).
2. ``llg``: llguidance masks, one token per pass.
3. ``llg+ff``: llguidance masks, grammar-forced tokens evaluated as one verified batch.

Reports per action: decode time (median, and ff / gbnf; target <= 0.7x), model passes, forced
tokens, and whether greedy output is identical to the baseline, prompt by prompt. Per token:
mask time of llguidance (measured in decoding) and of llama.cpp's grammar sampler (the GBNF
sampler applied to a full-vocabulary candidate array, replaying the baseline's tokens).

The prompts are the bundled tasks' contexts at every step of their oracle run (first steps and
later steps with a scripted history), assembled by the real harness; they are saved to
``$POCKETPILOT_HOME/bench/ff_prompts.jsonl`` and reused (``--rebuild`` to make them again).

    python bench/bench_fastforward.py [--model qwen2.5-coder-1.5b] [--limit 60] [--threads N]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

MODES = ("gbnf", "llg", "llg+ff")


def prompt_file() -> Path:
    """Where the recorded prompts are kept: later runs decode the same prompts (``--rebuild`` replaces them)."""
    from pocketpilot.models.store import pocketpilot_home

    return pocketpilot_home() / "bench" / "ff_prompts.jsonl"


def build_prompts(path: Path) -> int:
    """Every step's request of every bundled task's oracle run, through the real harness."""
    from pocketpilot.evaluation.compare import run_task
    from pocketpilot.harness.planners import ScriptedPlanner
    from pocketpilot.tasks.loader import load_suite
    from pocketpilot.tasks.oracle import oracle_actions

    async def go() -> list[dict[str, Any]]:
        rows = []
        for task in load_suite():
            actions = oracle_actions(task)
            if not actions:
                continue
            planner = ScriptedPlanner(actions)
            try:
                await run_task(task, planner, mode="bare")
            except Exception as exc:  # noqa: BLE001 - a task the replay cannot finish still gave its requests
                print(f"{task.id}: {type(exc).__name__}: {exc}", file=sys.stderr)
            for i, req in enumerate(planner.requests):
                rows.append({"task": task.id, "step": i, "request": req.model_dump(mode="json")})
        return rows

    rows = asyncio.run(go())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(rows)


def pick(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """First steps of every task first, then later steps, grouped by task (shared prefixes)."""
    first = [r for r in rows if r["step"] == 0]
    later = [r for r in rows if r["step"] > 0]
    chosen = first[: limit // 2] + later
    chosen = chosen[:limit]
    order = {t: i for i, t in enumerate(dict.fromkeys(r["task"] for r in chosen))}
    return sorted(chosen, key=lambda r: (order[r["task"]], r["step"]))


def gbnf_mask_times(planner: Any, request: Any, token_ids: list[int]) -> list[float]:
    """Seconds llama.cpp's grammar sampler takes to filter a full-vocabulary candidate array, per token."""
    import llama_cpp

    from pocketpilot.harness.action_schema import action_json_schema

    llm = planner._llm
    grammar = planner._grammar(action_json_schema(request.tools, request.kinds, request.skills))
    smpl = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, grammar._grammar.encode(), grammar._root.encode())
    n = llm.n_vocab()
    data = (llama_cpp.llama_token_data * n)()
    logits = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    arr = llama_cpp.llama_token_data_array(data=data, size=n, selected=-1, sorted=False)
    view = np.ctypeslib.as_array(ctypes.cast(data, ctypes.POINTER(ctypes.c_float * 3)), shape=(n,))
    ids = np.arange(n, dtype=np.int32)
    times = []
    try:
        for token in token_ids:
            view[:, 0] = ids.view(np.float32)  # llama_token_data is {int32 id, float logit, float p}
            view[:, 1] = logits
            view[:, 2] = 0.0
            arr.size, arr.selected, arr.sorted = n, -1, False
            t0 = time.perf_counter()
            llama_cpp.llama_sampler_apply(smpl, ctypes.byref(arr))
            times.append(time.perf_counter() - t0)
            llama_cpp.llama_sampler_accept(smpl, token)
    finally:
        llama_cpp.llama_sampler_free(smpl)
    return times


def llg_mask_times(planner: Any, request: Any, token_ids: list[int]) -> list[float]:
    """Seconds llguidance takes to compute the full token mask, per token of the same sequence."""
    import llguidance
    from llguidance.numpy import allocate_token_bitmask, fill_next_token_bitmask

    from pocketpilot.harness.action_schema import action_json_schema

    grammar = planner._llg_grammar(action_json_schema(request.tools, request.kinds, request.skills))
    matcher = llguidance.LLMatcher(planner._llg_tokenizer, grammar, log_level=0)
    bitmask = allocate_token_bitmask(1, planner._llg_tokenizer.vocab_size)
    times = []
    for token in token_ids:
        t0 = time.perf_counter()
        fill_next_token_bitmask(matcher, bitmask)
        times.append(time.perf_counter() - t0)
        if not matcher.consume_token(token):
            break
    return times


def main() -> None:
    """Decode the recorded prompts in each mode on one planner and print the per-action and per-token figures."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--limit", type=int, default=60)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--out", default=None, help="write per-prompt rows as JSON here")
    args = ap.parse_args()

    from pocketpilot.contracts import SamplerSettings
    from pocketpilot.harness.base import PlanRequest
    from pocketpilot.harness.planners import LlamaCppPlanner
    from pocketpilot.models.store import ModelStore

    path = prompt_file()
    if args.rebuild or not path.exists():
        print(f"built {build_prompts(path)} prompts into {path}")
    rows = pick([json.loads(line) for line in path.read_text().splitlines()], args.limit)
    model, _ = ModelStore().resolve(args.model)
    print(f"model {model.name}, {len(rows)} prompts ({sum(r['step'] == 0 for r in rows)} first steps), "
          f"threads {args.threads or os.cpu_count()}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    async def go() -> list[dict[str, Any]]:
        planner = LlamaCppPlanner(model, sampler=SamplerSettings(temperature=0.0, max_tokens=args.max_tokens),
                                  n_threads=args.threads, n_ctx=8192, constraint="llguidance", prefix_cache=False)
        await planner.load()
        out = []
        try:
            for row in rows:
                request = PlanRequest.model_validate(row["request"])
                rec: dict[str, Any] = {"task": row["task"], "step": row["step"]}
                for mode in MODES:
                    planner.constraint = "gbnf" if mode == "gbnf" else "llguidance"
                    planner.fast_forward = mode == "llg+ff"
                    try:
                        turn = (await planner.plan(request)).turn
                        valid = True
                    except Exception as exc:  # noqa: BLE001 - an invalid action is a result here
                        turn = getattr(exc, "turn", None)
                        valid = False
                    if turn is None:
                        rec[mode] = {"error": True}
                        continue
                    rec[mode] = {"ids": turn.token_ids, "raw": turn.raw, "decode_s": turn.decode_s, "passes": turn.decode_passes,
                                 "forced": turn.forced_tokens, "rejected": turn.forced_rejected,
                                 "constraint_s": turn.constraint_s, "valid": valid, "finish": turn.finish_reason,
                                 "prompt_tokens": turn.prompt_tokens}
                ids = rec["gbnf"].get("ids", [])
                rec["gbnf_mask_s"] = gbnf_mask_times(planner, request, ids)
                rec["llg_mask_s"] = llg_mask_times(planner, request, ids)
                out.append(rec)
                g, f = rec["gbnf"], rec["llg+ff"]
                print(f"{row['task']}#{row['step']}: {len(g.get('ids', []))} tok, gbnf {g.get('decode_s', 0):.2f}s "
                      f"llg {rec['llg'].get('decode_s', 0):.2f}s ff {f.get('decode_s', 0):.2f}s "
                      f"forced {f.get('forced')} rejected {f.get('rejected')} "
                      f"same {g.get('ids') == f.get('ids') == rec['llg'].get('ids')}", flush=True)
        finally:
            await planner.aclose()
        return out

    recs = asyncio.run(go())
    if args.out:
        Path(args.out).write_text(json.dumps(recs))
    ok = [r for r in recs if all("ids" in r[m] for m in MODES)]
    med = {m: statistics.median(r[m]["decode_s"] for r in ok) for m in MODES}
    ratios = [r["llg+ff"]["decode_s"] / r["gbnf"]["decode_s"] for r in ok]
    same_ff = sum(r["llg+ff"]["ids"] == r["gbnf"]["ids"] for r in ok)
    same_llg = sum(r["llg"]["ids"] == r["gbnf"]["ids"] for r in ok)
    same_ff_llg = sum(r["llg+ff"]["ids"] == r["llg"]["ids"] for r in ok)
    same_text = sum(r["llg+ff"]["raw"] == r["gbnf"]["raw"] for r in ok)
    llg_mask = [t for r in ok for t in r["llg_mask_s"]]
    llg_pick = [r["llg"]["constraint_s"] / max(1, r["llg"]["passes"]) for r in ok]
    gbnf_mask = [t for r in ok for t in r["gbnf_mask_s"]]
    toks = [len(r["gbnf"]["ids"]) for r in ok]
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\n| mode | median decode s / action | median passes | median forced tokens | valid |")
    print("|---|---|---|---|---|")
    for m in MODES:
        print(f"| {m} | {med[m]:.3f} | {statistics.median(r[m]['passes'] for r in ok)} | "
              f"{statistics.median(r[m]['forced'] for r in ok)} | {sum(r[m]['valid'] for r in ok)}/{len(ok)} |")
    print(f"\nmedian tokens per action {statistics.median(toks)}")
    print(f"decode time llg+ff / gbnf: median of per-prompt ratios {statistics.median(ratios):.2f}x, "
          f"ratio of medians {med['llg+ff'] / med['gbnf']:.2f}x; llg / gbnf {med['llg'] / med['gbnf']:.2f}x")
    print(f"mask time per token: llguidance median {statistics.median(llg_mask) * 1e3:.3f} ms, "
          f"llama.cpp GBNF median {statistics.median(gbnf_mask) * 1e3:.3f} ms "
          f"({statistics.median(gbnf_mask) / statistics.median(llg_mask):.0f}x); exact greedy pick with "
          f"llguidance (validate best candidates) median {statistics.median(llg_pick) * 1e3:.3f} ms per pass")
    print(f"greedy output identical to gbnf: llg+ff {same_ff}/{len(ok)}, llg {same_llg}/{len(ok)}; "
          f"llg+ff vs llg {same_ff_llg}/{len(ok)}; forced tokens rejected in all: "
          f"{sum(r['llg+ff']['rejected'] for r in ok)}; same action text llg+ff vs gbnf {same_text}/{len(ok)}")
    print(f"median model passes per action: gbnf {statistics.median(r['gbnf']['passes'] for r in ok)}, "
          f"llg+ff {statistics.median(r['llg+ff']['passes'] for r in ok)}; forced tokens accepted "
          f"{sum(r['llg+ff']['forced'] for r in ok)} of {sum(len(r['llg+ff']['ids']) for r in ok)} output tokens")


if __name__ == "__main__":
    main()
