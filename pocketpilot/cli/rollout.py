"""`pocketpilot rollout`: G rollouts per task on fresh sandbox phones, locally or over Ray."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import UsageError
from ..tasks import TaskSpec, load_suite
from ..trainer_bridge.rollouts import (
    LlamaPlannerFactory,
    PlannerFactory,
    ScriptedPlannerFactory,
    collect_rollouts,
    write_groups,
)
from ..trainer_bridge.rollouts.collect import summary

__all__ = ["rollout"]


def _select(spec: str) -> list[TaskSpec]:
    if spec in ("dev", "evolve", "test"):
        return load_suite(spec)  # type: ignore[arg-type]
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    by_id = {t.id: t for t in load_suite()}
    missing = [w for w in wanted if w not in by_id]
    if missing:
        raise UsageError(f"unknown task id(s): {', '.join(missing)}")
    return [by_id[w] for w in wanted]


@click.command("rollout", help="Collect G rollouts per task; writes traces and an RL-group JSONL.")
@click.option("--tasks", "task_spec", required=True, help="A split (dev/evolve/test) or comma-separated task ids.")
@click.option("--limit", type=click.IntRange(1), default=None, help="Use only the first N tasks.")
@click.option("--group-size", type=click.IntRange(1), default=4, show_default=True, help="Rollouts per task (G).")
@click.option("--workers", type=click.IntRange(1), default=1, show_default=True, help="Parallel environments.")
@click.option("--ray", "use_ray", is_flag=True, help="Run episodes on Ray actors (pip install 'pocketpilot[ray]').")
@click.option("--ray-address", default=None, help="Ray cluster address (default: start a local one).")
@click.option("--planner", type=click.Choice(["llama", "scripted"]), default="llama", show_default=True)
@click.option("--model", type=click.Path(exists=True, dir_okay=False), default=None, help="GGUF file for --planner llama.")
@click.option("--lora", type=click.Path(exists=True, dir_okay=False), default=None)
@click.option("--failure-rate", type=click.FloatRange(0, 1), default=0.3, show_default=True,
              help="--planner scripted: share of episodes cut short.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True)
def rollout(task_spec: str, limit: int | None, group_size: int, workers: int, use_ray: bool, ray_address: str | None,
            planner: str, model: str | None, lora: str | None, failure_rate: float, out_dir: str) -> None:
    """Entry point."""
    tasks = _select(task_spec)[:limit]
    if planner == "llama":
        if model is None:
            from ..models.store import DEFAULT_MODEL, ModelStore

            model = str(ModelStore().resolve(DEFAULT_MODEL)[0])
        factory: PlannerFactory = LlamaPlannerFactory(Path(model), Path(lora) if lora else None)
    else:
        factory = ScriptedPlannerFactory(failure_rate=failure_rate)
    out = Path(out_dir)
    report = collect_rollouts(tasks, group_size, factory, workers=workers, trace_dir=out / "traces",
                              use_ray=use_ray, ray_address=ray_address)
    groups = write_groups(report.groups, out / "groups.jsonl")
    click.echo(json.dumps({**summary(report), "groups_file": str(groups)}, indent=2))
