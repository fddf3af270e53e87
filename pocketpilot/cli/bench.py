"""`pocketpilot bench`: the report's comparison, one planner with and without its harness.

``--split test`` runs the held-out split; ``--no-harness`` runs the bare planner only;
``--compare`` runs both configurations in one invocation (the same loaded model), and the
Markdown table shows per group success rate, mean steps, output tokens, wall time and the lift.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from ..errors import UsageError
from ..evaluation import BenchReport, Mode, TaskOutcome, load_harness_kit, run_comparison
from ..tasks import load_suite
from ._planner import build_planner, planner_options
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
@click.option("--per-group", type=int, default=None, help="Only the first N tasks of each group (a stratified subset).")
@click.option("--no-harness", "no_harness", is_flag=True, help="Bare planner: memories as earlier conversation, no skills/retrieval/gates.")
@click.option("--compare", is_flag=True, help="Run bare and harness on the same tasks and report the lift.")
@click.option("--embedder/--no-embedder", "use_embedder", default=True, show_default=True,
              help="Hybrid retrieval with the built MiniLM embedder (keyword-only when absent).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the JSON report here.")
@click.option("--markdown", "markdown_out", type=click.Path(dir_okay=False), default=None, help="Write the Markdown table here.")
@click.option("--trace-dir", type=click.Path(file_okay=False), default=None)
@planner_options
def bench(tasks_dir: str | None, split: str | None, task_ids: tuple[str, ...], groups: tuple[str, ...], limit: int | None,
          per_group: int | None, no_harness: bool,
          compare: bool, use_embedder: bool, out: str | None, markdown_out: str | None, trace_dir: str | None,
          model: str, endpoint: str | None, temperature: float, max_new_tokens: int, pull: bool) -> None:
    """Run bundled tasks with and/or without the harness; per group: success, steps, output tokens, wall time."""
    if compare and no_harness:
        raise UsageError("--compare already runs the bare planner; drop --no-harness")
    tasks = select_tasks(split, task_ids, groups, limit, per_group, directory=tasks_dir)
    modes: tuple[Mode, ...] = ("bare", "harness") if compare else ("bare",) if no_harness else ("harness",)
    embedder = None
    if "harness" in modes and use_embedder:
        from ._embedder import default_embedder

        embedder = default_embedder()
    kit = load_harness_kit()
    planner = build_planner(model, endpoint, temperature, max_new_tokens, pull)

    bar = task_bar(len(tasks) * len(modes))  # tasks done of the total, with an ETA (on a terminal)

    def progress(i: int, o: TaskOutcome) -> None:
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
                on_task=progress, embedder=embedder, kit=kit,
            )
        finally:
            bar.close()
            await planner.aclose()

    report = asyncio.run(main())
    table = report.markdown()
    click.echo("")
    click.echo(table)
    if out:
        Path(out).write_text(json.dumps(report.to_json(), indent=2))
        click.echo(f"\nreport: {out}")
    if markdown_out:
        Path(markdown_out).write_text(table + "\n")
