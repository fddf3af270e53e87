"""``pocketpilot evolve --tasks DIR``: co-evolve η on dev and evolve tasks (see :mod:`pocketpilot.evaluation.evolve`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ._planner import build_planner, planner_options

__all__ = ["evolve"]


def _planner_factory(model: str, endpoint: str | None, temperature: float, max_new_tokens: int,
                     pull: bool) -> tuple[Callable[[Any, Any], Any], Callable[[], Any]]:
    """One loaded model for every task and η (a planner holds no state between runs), and its closer."""
    planner = build_planner(model, endpoint, temperature, max_new_tokens, pull)
    return (lambda task, eta: planner), planner.aclose


@click.command("evolve")
@click.option("--tasks", "tasks_dir", type=click.Path(file_okay=False, exists=True),
              help="A task folder made by `pocketpilot tasks generate` (its MANIFEST.yml says each task's split). "
                   "Required, except with --report-only.")
@click.option("--iterations", type=click.IntRange(1), default=1, show_default=True,
              help="Iterations in all (a resumed run continues up to this many).")
@click.option("--dev-sample", type=click.IntRange(1), default=60, show_default=True,
              help="Dev tasks run per iteration (stratified by group).")
@click.option("--evolve-sample", type=click.IntRange(1), default=40, show_default=True,
              help="Evolve tasks each candidate is measured on (stratified by group, the same for every candidate).")
@click.option("--max-candidates", type=click.IntRange(1), default=4, show_default=True,
              help="Candidates measured per iteration (those with the most evidence).")
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed.")
@click.option("--out", "out", type=click.Path(file_okay=False), default="evolve-out", show_default=True,
              help="State folder: resumed when it holds an earlier run (η, revisions, episodes, report.md).")
@click.option("--eta", "eta_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="η of the first iteration (default: the bench's, compiled for the sandbox and the built-in skills).")
@click.option("--auto-approve", is_flag=True,
              help="Approve each accepted revision at once (benches); else the loop stops until "
                   "`pocketpilot adapter approve OUT/eta.json ID --by NAME`, then resumes on the next call.")
@click.option("--min-support", type=click.IntRange(1), default=2, show_default=True,
              help="Failed dev episodes a diagnosis finding needs to become a candidate.")
@click.option("--evict-threshold", type=click.IntRange(1), default=2, show_default=True,
              help="Harm (evolve tasks an experience entry was shown in that failed with it and passed without "
                   "it, over the iterations) at which the entry becomes an eviction candidate.")
@click.option("--harm-pairing", type=click.Choice(["paired", "previous"]), default="paired", show_default=True,
              help="What a failed evolve task shown experience is compared with: the same task rerun with "
                   "experience off (paired), or its outcome in the previous iteration's baseline (previous, no rerun).")
@click.option("--experience-pool/--no-experience-pool", "experience_pool", default=False, show_default=True,
              help="Distil experience from the verified successes of every earlier iteration (dev samples and "
                   "evolve baselines), not only this iteration's dev and the previous evolve baseline. Fixed for OUT.")
@click.option("--embedder/--no-embedder", "use_embedder", default=True, show_default=True,
              help="Hybrid retrieval with the built MiniLM embedder (keyword-only when absent).")
@click.option("--ablation", "ablation_file", type=click.Path(dir_okay=False), default=None,
              help="A policy ablation on dev (the JSON of bench/bench_ablation.py, or {policy: cost}): a policy "
                   "it shows costing tasks becomes a candidate to leave out, measured like any other.")
@click.option("--decode-memo/--no-decode-memo", "decode_memo", default=True, show_default=True,
              help="Serve a greedy decode this run (or an earlier one on OUT) already made from OUT/decode-memo.jsonl: "
                   "a candidate's rerun decodes only the steps whose prompt it changes. Never used for sampling.")
@click.option("--report-only", is_flag=True,
              help="Write OUT/report.md again from the folder's files, and print it: runs nothing, loads no model, "
                   "takes no lock and writes nothing else (--tasks is not needed), so it also renders a folder "
                   "written by an older version or still being written.")
@planner_options
def evolve(tasks_dir: str | None, iterations: int, dev_sample: int, evolve_sample: int, max_candidates: int, seed: int,
           out: str, eta_file: str | None, auto_approve: bool, min_support: int, evict_threshold: int,
           harm_pairing: str, use_embedder: bool, model: str,
           endpoint: str | None, temperature: float, max_new_tokens: int, pull: bool,
           ablation_file: str | None = None, decode_memo: bool = True, report_only: bool = False,
           experience_pool: bool = False) -> None:
    """Run dev tasks under η, learn from them, accept what gains on evolve, and repeat.

    Never reads the test split. Prints and writes (OUT/report.md) the per-iteration table and the
    planner steps the decode memo served; --report-only writes that file again and does nothing else.
    One run at a time per OUT: a second is refused (exit 2) while the first runs.
    """
    if report_only:
        from ..evaluation.evolve_report import render_report

        click.echo(render_report(out))
        click.echo(f"\nreport: {Path(out) / 'report.md'}")
        return
    if tasks_dir is None:
        ctx = click.get_current_context()
        raise click.MissingParameter(ctx=ctx, param=next(p for p in ctx.command.params if p.name == "tasks_dir"))
    from ..adapters import load_eta
    from ..evaluation.ablation import load_ablation
    from ..evaluation.evolve import CandidateProposer, EvolveLoop, ExperienceDistiller
    from ..evaluation.evolve_state import EvolveSettings
    from ..evaluation.task_episode import load_harness_kit

    ablation = load_ablation(ablation_file) if ablation_file else None
    settings = EvolveSettings(tasks_dir=str(Path(tasks_dir).resolve()), dev_sample=dev_sample,
                              evolve_sample=evolve_sample, seed=seed, max_candidates=max_candidates,
                              evict_threshold=evict_threshold, harm_pairing=harm_pairing,
                              experience_pool=experience_pool)
    kit = load_harness_kit()
    base = load_eta(eta_file) if eta_file else kit.eta
    holder: dict[str, Any] = {}

    def factory(task: Any, eta: Any) -> Any:
        if "make" not in holder:  # the model loads at the first episode, after every check passed
            holder["make"], holder["close"] = _planner_factory(model, endpoint, temperature, max_new_tokens, pull)
        return holder["make"](task, eta)

    loop = EvolveLoop(out, settings, factory, base_eta=base, library=kit.library,
                      proposer=CandidateProposer(min_support, ablation=ablation), distiller=ExperienceDistiller(),
                      auto_approve=auto_approve, on_event=click.echo, decode_memo=decode_memo)
    loop.check()
    if use_embedder:
        from ._embedder import default_embedder

        loop.embedder = default_embedder()

    async def main() -> Any:
        try:
            return await loop.run(iterations)
        finally:
            if "close" in holder:
                await holder["close"]()

    result = asyncio.run(main())
    table = loop.report_table()  # run() wrote report.md, under the folder's lock
    click.echo("")
    click.echo(table)
    click.echo(f"\nreport: {Path(out) / 'report.md'}")
    if result.waiting_for:
        click.echo(f"waiting for approval of {result.waiting_for}: `pocketpilot adapter approve "
                   f"{Path(out) / 'eta.json'} {result.waiting_for} --by NAME`, then run this command again "
                   "(or delete the pending file to reject it)")
