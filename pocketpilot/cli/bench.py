"""`pocketpilot bench`: the report's comparison, one planner with and without its harness.

``--split test`` runs the held-out split; ``--no-harness`` runs the bare planner only;
``--compare`` runs both configurations in one invocation (the same loaded model), and the
Markdown table shows per group success rate, mean steps, output tokens, wall time and the lift.
At suite size: ``--shard i/n``, ``--resume`` and ``--backend ray`` (see :mod:`pocketpilot.evaluation.bench_runs`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click
from click.core import ParameterSource

from ..errors import BackendUnavailableError, UsageError
from ..evaluation.bench_runs import OutcomeLog, parse_shard, run_ray_outcomes, shard_tasks, still_valid
from ..evaluation.compare import (
    BenchReport,
    Mode,
    RunSettings,
    SuiteReport,
    TaskOutcome,
    load_harness_kit,
    run_comparison,
)
from ..tasks import load_suite
from ._exposure import check_exposure, exposure_options
from ._planner import budget_overrides, build_planner, planner_options
from ._progress import task_bar

__all__ = ["bench", "select_tasks"]


def select_tasks(
    split: str | None, task_ids: tuple[str, ...], groups: tuple[str, ...], limit: int | None, per_group: int | None = None,
    directory: str | None = None,
) -> list:
    """The tasks of ``split`` (bundled, or the folder ``directory``), narrowed to ids and groups,
    ``per_group`` evenly spaced tasks of each group (a stratified subset), at most ``limit`` of them.

    Raises:
        UsageError: unknown ids, or nothing selected.
        TaskSpecError: a task file in ``directory`` is invalid (one line naming the file).
    """
    tasks = load_suite(split, directory=directory)  # type: ignore[arg-type]
    if task_ids:
        unknown = set(task_ids) - {t.id for t in tasks}
        if unknown:
            raise UsageError(f"unknown task ids: {', '.join(sorted(unknown))}")
        tasks = [t for t in tasks if t.id in task_ids]
    if groups:
        tasks = [t for t in tasks if t.group in groups]
    if per_group:
        by_group: dict[str, list] = {}
        for t in tasks:
            by_group.setdefault(t.group, []).append(t)
        columns = []
        for items in by_group.values():
            n = min(per_group, len(items))
            columns.append([items[i * len(items) // n] for i in range(n)])  # evenly spaced, deterministic
        # round-robin over the groups, so a run cut short still covers every group
        tasks = [col[i] for i in range(per_group) for col in columns if i < len(col)]
    tasks = tasks[:limit] if limit else tasks
    if not tasks:
        raise UsageError("no tasks selected")
    return tasks


@click.command("bench")
@click.option("--tasks", "tasks_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="A folder of task files to run instead of the bundled suite (an app team's own tasks).")
@click.option("--split", type=click.Choice(["dev", "evolve", "test"]), default=None, help="Only this split.")
@click.option("--task-id", "task_ids", multiple=True, help="Only these tasks (repeatable).")
@click.option("--group", "groups", multiple=True, type=click.Choice(["tool_use", "memory", "skills", "subagent"]),
              help="Only these capability groups (repeatable).")
@click.option("--limit", type=int, default=None, help="At most N tasks (a stated subset).")
@click.option("--per-group", type=int, default=None, help="Only N evenly spaced tasks of each group (a stratified subset).")
@click.option("--no-harness", "no_harness", is_flag=True,
              help="Bare planner: memories as earlier conversation, no skills/retrieval/gates.")
@click.option("--compare", is_flag=True, help="Run bare and harness on the same tasks and report the lift.")
@click.option("--embedder/--no-embedder", "use_embedder", default=True, show_default=True,
              help="Hybrid retrieval with the built MiniLM embedder (keyword-only when absent).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the JSON report here.")
@click.option("--markdown", "markdown_out", type=click.Path(dir_okay=False), default=None, help="Write the Markdown table here.")
@click.option("--trace-dir", type=click.Path(file_okay=False), default=None,
              help="Traces, and outcomes.jsonl (each finished task, as it finishes: what --resume reads).")
@click.option("--shard", default=None, help="Only shard i of n (i/n, e.g. 0/4): a fixed partition by task id.")
@click.option("--resume", is_flag=True, help="Skip tasks already finished in --trace-dir (outcomes.jsonl).")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="ray: episodes on Ray actors, one model per actor (harness mode, local GGUF).")
@click.option("--workers", type=click.IntRange(1), default=2, show_default=True, help="Ray actors (--backend ray).")
@click.option("--ray-address", default=None, help="Ray cluster address (default: start a local one).")
@click.option("--guidance-file", "guidance_files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A document (an operating policy) every task runs with instead of its own; repeatable.")
@click.option("--decode-memo", "decode_memo", type=click.Path(dir_okay=False), default=None,
              help="Serve greedy decodes already made from this JSONL file and store new ones (see "
                   "pocketpilot.harness.planners.decode_memo); off by default: never with wall-time figures.")
@exposure_options
@planner_options
def bench(tasks_dir: str | None, split: str | None, task_ids: tuple[str, ...], groups: tuple[str, ...], limit: int | None,
          per_group: int | None, no_harness: bool,
          compare: bool, use_embedder: bool, out: str | None, markdown_out: str | None, trace_dir: str | None,
          shard: str | None, resume: bool, backend: str, workers: int, ray_address: str | None,
          model: str, endpoint: str | None, temperature: float, max_new_tokens: int, pull: bool,
          guidance_files: tuple[str, ...] = (), exposure: str = "task", tool_k: int | None = None,
          decode_memo: str | None = None) -> None:
    """Run bundled tasks with and/or without the harness; per group: success, steps, output tokens, wall time.

    A task's guidance, budget and n_ctx (its own, or its folder's ``_defaults.yaml``) apply;
    ``--guidance-file`` replaces the guidance, ``--budget`` a section, ``--n-ctx`` the window (the
    model loads once, with the largest window the tasks ask for when the flag is not given).
    """
    if compare and no_harness:
        raise UsageError("--compare already runs the bare planner; drop --no-harness")
    if resume and not trace_dir:
        raise UsageError("--resume needs --trace-dir (where the earlier run's outcomes.jsonl is)")
    ctx = click.get_current_context()
    if backend != "ray":
        for name in ("workers", "ray_address"):
            if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE:
                raise UsageError(f"--{name.replace('_', '-')} applies to --backend ray")
    exposure, tool_k = check_exposure(exposure, tool_k)
    settings = RunSettings(
        guidance=tuple(Path(f).read_text(encoding="utf-8") for f in guidance_files) if guidance_files else None,
        budget=budget_overrides(), exposure=exposure, tool_k=tool_k,
    )
    tasks = select_tasks(split, task_ids, groups, limit, per_group, directory=tasks_dir)
    if shard:
        index, count = parse_shard(shard)
        tasks = shard_tasks(tasks, index, count)
        click.echo(f"shard {index}/{count}: {len(tasks)} task(s)")
    modes: tuple[Mode, ...] = ("bare", "harness") if compare else ("bare",) if no_harness else ("harness",)
    log = OutcomeLog(Path(trace_dir)) if trace_dir else None
    done = log.load() if (log is not None and resume) else {}
    done = still_valid(done, tasks, modes)
    if resume:
        click.echo(f"resume: {len(done)} of {len(tasks) * len(modes)} run(s) already finished")
    if backend == "ray" and decode_memo:
        raise UsageError("--decode-memo applies to --backend local (one process owns the memo file)")
    if backend == "ray":
        _refuse_for_ray(ctx, settings, tasks)
        _bench_ray(tasks, modes, done, log, split, model, endpoint, temperature, max_new_tokens, workers,
                   ray_address, out, markdown_out, trace_dir)
        return
    embedder = None
    if "harness" in modes and use_embedder:
        from ._embedder import default_embedder

        embedder = default_embedder()
    kit = load_harness_kit()
    windows = [t.n_ctx for t in tasks if t.n_ctx is not None]
    planner = build_planner(model, endpoint, temperature, max_new_tokens, pull, n_ctx=max(windows) if windows else None)
    memo = None
    if decode_memo:
        from ..harness.planners.decode_memo import DecodeMemo, MemoPlanner

        memo = DecodeMemo(decode_memo)
        planner = MemoPlanner(planner, memo)

    bar = task_bar(len(tasks) * len(modes) - len(done))  # runs left of the total, with an ETA (on a terminal)

    def progress(i: int, o: TaskOutcome) -> None:
        if log is not None:
            log.append(o)
        bar.update(1)
        mark = "PASS" if o.success else "fail"
        click.echo(
            f"[{o.mode} {i + 1}/{len(tasks)}] {mark} {o.task_id:36} {o.group:9} steps={o.steps} "
            f"out_tok={o.completion_tokens} {o.wall_s:.1f}s stop={o.stop_reason}"
        )

    async def main() -> BenchReport:
        try:
            return await run_comparison(
                tasks, planner, modes=modes, split=split, trace_dir=Path(trace_dir) if trace_dir else None,
                on_task=progress, embedder=embedder, kit=kit, done=done, settings=settings,
            )
        finally:
            bar.close()
            await planner.aclose()

    report = asyncio.run(main())
    if memo is not None:
        click.echo(memo.stats.line())
    _write_report(report, out, markdown_out)


def _write_report(report: BenchReport, out: str | None, markdown_out: str | None) -> None:
    table = report.markdown()
    click.echo("")
    click.echo(table)
    for mode, run in report.runs.items():
        walls = sorted(run.outcomes, key=lambda o: o.wall_s)
        if walls:
            total = sum(o.wall_s for o in walls)
            click.echo(f"{mode} wall time: {total:.1f}s for {len(walls)} task(s), {total / len(walls):.2f}s per task, "
                       f"slowest {walls[-1].task_id} {walls[-1].wall_s:.1f}s")
    if out:
        Path(out).write_text(json.dumps(report.to_json(), indent=2))
        click.echo(f"\nreport: {out}")
    if markdown_out:
        Path(markdown_out).write_text(table + "\n")


_RAY_IGNORES = ("threads", "n_ctx", "constraint", "fast_forward", "reproducible", "budget", "guidance_files",
                "use_embedder", "api_key", "output_mode", "exposure", "tool_k",
                "think_tokens", "choose_then_fill", "flash_attn", "kv_type")
"""Flags the Ray actors' planners and sessions do not read (each actor builds its own): refused, not ignored."""


def _refuse_for_ray(ctx: click.Context, settings: RunSettings, tasks: list) -> None:
    given = [n for n in _RAY_IGNORES if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE]
    if given:
        raise UsageError(", ".join("--" + ("guidance-file" if n == "guidance_files" else
                                           "embedder" if n == "use_embedder" else n.replace("_", "-"))
                                   for n in given) + " cannot be passed to --backend ray's actors")
    asking = sorted(t.id for t in tasks if t.guidance or t.budget or t.n_ctx)
    if asking:
        raise UsageError(f"--backend ray runs tasks without their guidance, budget or n_ctx; these set some: "
                         f"{', '.join(asking[:5])}{' ...' if len(asking) > 5 else ''}")


def _bench_ray(tasks: list, modes: tuple[Mode, ...], done: dict, log: OutcomeLog | None, split: str | None,
               model: str, endpoint: str | None, temperature: float, max_new_tokens: int, workers: int,
               ray_address: str | None, out: str | None, markdown_out: str | None, trace_dir: str | None) -> None:
    """The same tasks on Ray actors (the rollout pool): each actor loads the GGUF once."""
    from ..contracts import SamplerSettings
    from ..trainer_bridge.rollouts import LlamaPlannerFactory
    from ..trainer_bridge.rollouts.ray_pool import ray_available

    if not ray_available():
        raise BackendUnavailableError("ray", "pip install 'pocketpilot[ray]'")
    if modes != ("harness",):
        raise UsageError("--backend ray runs the harness configuration only; drop --compare/--no-harness")
    if endpoint:
        raise UsageError("--backend ray loads a local GGUF in each actor; --endpoint serves one model already")
    from ..models.store import ModelStore

    path, _ = ModelStore().resolve(model)
    factory = LlamaPlannerFactory(Path(path), sampler=SamplerSettings(temperature=temperature, max_tokens=max_new_tokens))
    todo = [t for t in tasks if (t.id, "harness") not in done]
    fresh = run_ray_outcomes(todo, factory, workers=workers, trace_dir=Path(trace_dir) / "harness" if trace_dir else None,
                             address=ray_address) if todo else []
    if log is not None:
        for o in fresh:
            log.append(o)
    by_id = {o.task_id: o for o in fresh} | {k[0]: v for k, v in done.items()}
    outcomes = [by_id[t.id] for t in tasks]
    info = {"backend": "ray", "model": str(path), "workers": workers}
    report = BenchReport(planner=info, split=split, task_ids=[t.id for t in tasks], kit={"backend": "ray"},
                         runs={"harness": SuiteReport(planner=info, outcomes=outcomes, mode="harness")})
    _write_report(report, out, markdown_out)
