"""`pocketpilot bench`: the task suite through the harness, per-capability figures."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import click

from ..evaluation import TaskOutcome, run_suite
from ..errors import UsageError
from ..tasks import load_suite
from ._planner import build_planner, planner_options

__all__ = ["bench"]


@click.command("bench")
@click.option("--split", type=click.Choice(["dev", "evolve", "test"]), default=None, help="Only this split.")
@click.option("--task-id", "task_ids", multiple=True, help="Only these tasks (repeatable).")
@click.option("--limit", type=int, default=None, help="At most N tasks (a stated subset).")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the JSON report here.")
@click.option("--trace-dir", type=click.Path(file_okay=False), default=None)
@planner_options
def bench(split: str | None, task_ids: tuple[str, ...], limit: int | None, out: str | None, trace_dir: str | None,
          model: str, endpoint: str | None, temperature: float, max_new_tokens: int, pull: bool) -> None:
    """Run the bundled tasks; print success rate per capability, steps, tokens, wall time."""
    tasks = load_suite(split)  # type: ignore[arg-type]
    if task_ids:
        unknown = set(task_ids) - {t.id for t in tasks}
        if unknown:
            raise UsageError(f"unknown task ids: {', '.join(sorted(unknown))}")
        tasks = [t for t in tasks if t.id in task_ids]
    tasks = tasks[:limit] if limit else tasks
    if not tasks:
        raise UsageError("no tasks selected")
    planner = build_planner(model, endpoint, temperature, max_new_tokens, pull)

    def progress(i: int, o: TaskOutcome) -> None:
        mark = "PASS" if o.success else "fail"
        click.echo(
            f"[{i + 1}/{len(tasks)}] {mark} {o.task_id:36} {o.capability:15} steps={o.steps} "
            f"out_tok={o.completion_tokens} {o.wall_s:.1f}s stop={o.stop_reason}"
        )

    async def main():  # type: ignore[no-untyped-def]
        try:
            return await run_suite(tasks, planner, trace_dir=Path(trace_dir) if trace_dir else None, on_task=progress)
        finally:
            await planner.aclose()

    report = asyncio.run(main())
    click.echo("")
    click.echo(report.markdown("capability"))
    if out:
        Path(out).write_text(json.dumps({"report": report.model_dump(mode="json"), "by_capability": report.by("capability")}, indent=2))
        click.echo(f"\nreport: {out}")
