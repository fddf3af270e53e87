"""Checkpoint import with both gates on the 0.5B model: wall time per phase.

    PYTHONPATH=. .venv/bin/python bench/bench_import.py [--quantize Q8_0] [--probes 8] [--dev-tasks 2]

A fresh registry in a temp directory; the 0.5B model is first registered as the serving
version (copy + sha256 only), then imported again as a candidate: copy + sha256 + header and
tokenizer checks, llama.cpp quantization to ``--quantize``, parity of the quantized file vs the
imported file on ``--probes`` prompts, and the dev-set gate (real harness, llama.cpp planner)
on the first ``--dev-tasks`` dev tasks for candidate and serving version. The baseline figure
is the bootstrap registration (copy + hash) measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from pocketpilot.models.store import ModelStore
from pocketpilot.tasks import load_suite
from pocketpilot.trainer_bridge.checkpoints import (
    DEFAULT_PROBES,
    GateFailedError,
    ImportOptions,
    ParityBounds,
    Registry,
    import_checkpoint,
)


def main() -> None:
    """Register the model, import it again through both gates, and print the wall time of each phase."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--quantize", default="Q8_0")
    ap.add_argument("--probes", type=int, default=len(DEFAULT_PROBES))
    ap.add_argument("--dev-tasks", type=int, default=2)
    ap.add_argument("--min-top1", type=float, default=ParityBounds().min_top1_agreement)
    ap.add_argument("--max-kl", type=float, default=ParityBounds().max_mean_kl)
    args = ap.parse_args()
    model, _ = ModelStore().resolve(args.model)
    dev = load_suite("dev")[: args.dev_tasks]
    with tempfile.TemporaryDirectory(prefix="pp-bench-import-") as tmp:
        reg = Registry(Path(tmp))
        t0 = time.monotonic()
        bootstrap_opts = ImportOptions(promote=True, force_reason="bench bootstrap: nothing serves yet")
        asyncio.run(import_checkpoint(model, bootstrap_opts, registry=reg))
        bootstrap = time.monotonic() - t0
        opts = ImportOptions(
            quantize=args.quantize, probes=DEFAULT_PROBES[: args.probes], dev_tasks=dev, promote=True,
            parity_bounds=ParityBounds(min_top1_agreement=args.min_top1, max_mean_kl=args.max_kl),
        )
        t0 = time.monotonic()
        outcome = "promoted"
        try:
            result = asyncio.run(import_checkpoint(model, opts, registry=reg))
            parity, devr = result.parity, result.dev
        except GateFailedError as exc:
            outcome = f"rejected ({exc})"
            gates = reg.versions()[-1].gates
            parity, devr = gates.get("parity"), gates.get("dev")
        total = time.monotonic() - t0
    print(f"model {model.name} ({model.stat().st_size / 1e6:.0f} MB), quantize -> {args.quantize}, "
          f"{args.probes} probe prompts, {len(dev)} dev tasks ({', '.join(t.id for t in dev)})")
    print(f"  baseline: bootstrap registration (copy + sha256)  {bootstrap:7.1f} s")
    print(f"  import with both gates: {total:7.1f} s  (x{total / bootstrap:.0f} the baseline) -> {outcome}")
    if parity is not None:
        p = parity if isinstance(parity, dict) else parity.model_dump()
        print(f"    parity: {p['wall_s']:.1f} s, top-1 agreement {p['top1_agreement']:.3f}, mean KL {p['mean_kl']:.4f} "
              f"over {p['positions']} positions")
    if devr is not None:
        d = devr if isinstance(devr, dict) else devr.model_dump()
        print(f"    dev gate: {d['wall_s']:.1f} s, candidate {d['candidate_success_rate']:.0%} vs serving "
              f"{d['serving_success_rate']:.0%}")
        spent = total - p["wall_s"] - d["wall_s"] if parity is not None else total - d["wall_s"]
        print(f"    copy + hash + checks + quantize: {spent:.1f} s")


if __name__ == "__main__":
    main()
