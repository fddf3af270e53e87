"""``pocketpilot tasks``: generate validated task files from templates, and resample a task mix from a bench report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

__all__ = ["tasks"]


@click.group("tasks", help="Generate task files from templates; resample a training task mix.")
def tasks() -> None:
    """Task factory commands."""


@tasks.command("generate")
@click.option("--world", "world_ref", default=None,
              help="The world: sandbox (default), a world YAML/JSON file (a task file's world: section), "
                   "or pkg.mod:attr naming such a section.")
@click.option("--templates", "templates_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="A folder of templates (default: the bundled ones).")
@click.option("--count", "-n", type=int, default=100, show_default=True, help="Tasks wanted.")
@click.option("--seed", type=int, default=0, show_default=True, help="Same seed, same tasks.")
@click.option("--template", "only", multiple=True, help="Only these template ids (repeatable).")
@click.option("--prefix", default="gen-", show_default=True, help="Task id prefix.")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False), help="Folder to write the task files to.")
@click.option("--clean", is_flag=True, help="Remove the folder's earlier task files first.")
def generate_cmd(world_ref: str | None, templates_dir: str | None, count: int, seed: int, only: tuple[str, ...],
                 prefix: str, out: str, clean: bool) -> None:
    """Generate tasks, validate each (oracle passes, do-nothing fails, a perturbed oracle fails, no
    criterion true at the start), and write only those that pass; print drops by check and the time.
    """
    from ..errors import UsageError
    from ..tasks.gen_world import load_gen_world
    from ..tasks.generate import generate, write_tasks
    from ..tasks.template import load_templates
    from ..tasks.validate import CHECKS

    if count < 1:
        raise UsageError("--count must be at least 1")
    world = load_gen_world(world_ref)
    templates = load_templates(templates_dir)
    unknown = set(only) - {t.id for t in templates.templates}
    if unknown:
        raise UsageError(f"unknown template ids: {', '.join(sorted(unknown))}")
    gen = generate(world, templates, count=count, seed=seed, only=list(only) or None, prefix=prefix)
    write_tasks(gen, out, clean=clean)
    drafted = len(gen.tasks) + sum(gen.drops.values())
    click.echo(f"world {world.name}: {len(world.tools())} tools in {len(world.apps())} apps; "
               f"templates {templates.digest}")
    for tid, n in gen.per_template.items():
        click.echo(f"  {tid:24} {n}")
    click.echo(f"wrote {len(gen.tasks)} task(s) to {out} in {gen.seconds:.1f}s "
               f"(load average {os.getloadavg()[0]:.2f})")
    click.echo(f"validated {drafted} draft(s); dropped by check: "
               + ", ".join(f"{c} {gen.drops.get(c, 0)}" for c in CHECKS))
    click.echo("not validated: " + (", ".join(f"{k} {v}" for k, v in sorted(gen.skipped.items())) or "none"))


@tasks.command("generate-history")
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Folder to write the tasks to (default: the bundled long-history folder).")
@click.option("--seed", type=int, default=None, help="Same seed, same tasks (default: the bundled folder's).")
@click.option("--tables", type=click.Path(dir_okay=False, exists=True), default=None,
              help="The data tables to draw from (default: the bundled ones).")
def generate_history_cmd(out: str | None, seed: int | None, tables: str | None) -> None:
    """Generate the long-history memory tasks: owners with hundreds of dated memories over months,
    questions whose answer is one of them and actions that need a stated wish, beside superseded
    facts and near-duplicates; every task is validated on the sandbox before it is written.
    """
    import time

    from ..tasks.long_history import HISTORY_DIR, HISTORY_SEED, generate_history, load_tables, write_history

    t0 = time.monotonic()
    seed = HISTORY_SEED if seed is None else seed
    gen = generate_history(seed=seed, tables=load_tables(tables) if tables else None)
    target = Path(out) if out else HISTORY_DIR
    write_history(gen, target, seed=seed)
    for key, n in gen.manifest(seed)["by_split_kind"].items():
        click.echo(f"  {key:18} {n}")
    sizes = sorted(set(gen.manifest(seed)["memories_per_owner"].values()))
    click.echo(f"wrote {len(gen.tasks)} task(s) to {target} in {time.monotonic() - t0:.1f}s "
               f"(memories per owner: {', '.join(map(str, sizes))}; load average {os.getloadavg()[0]:.2f})")
    click.echo("dropped by check: " + (", ".join(f"{k} {v}" for k, v in gen.dropped.items()) or "none"))


@tasks.command("resample")
@click.argument("reports", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--labels", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Diagnosis labels (JSONL of `pocketpilot diagnose --json`).")
@click.option("--out", "-o", required=True, type=click.Path(dir_okay=False), help="The task mix (JSON).")
@click.option("--tasks", "tasks_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Folder of the report's tasks (default: bundled suite and generated suite).")
@click.option("--new", "new_count", type=int, default=0, show_default=True,
              help="Also generate this many new tasks for the failure categories' templates.")
@click.option("--new-dir", type=click.Path(file_okay=False), default=None, help="Where the new tasks go.")
@click.option("--seed", type=int, default=0, show_default=True)
def resample_cmd(reports: tuple[str, ...], labels: str | None, out: str, tasks_dir: str | None, new_count: int,
                 new_dir: str | None, seed: int) -> None:
    """Up-weight unstable tasks, down-sample mastered ones, and add new tasks where failures cluster."""
    from ..errors import UsageError
    from ..tasks.resample import resample

    if new_count and not new_dir:
        raise UsageError("--new needs --new-dir")
    mix = resample([Path(r) for r in reports], labels=Path(labels) if labels else None,
                   tasks_dir=Path(tasks_dir) if tasks_dir else None, new_count=new_count,
                   new_dir=Path(new_dir) if new_dir else None, seed=seed)
    Path(out).write_text(json.dumps(mix.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")
    counts = mix.counts()
    click.echo(f"mix {mix.rule}: {len(mix.weights)} task(s) — " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if mix.generated:
        click.echo(f"generated {len(mix.generated)} new task(s) in {new_dir} for templates {', '.join(mix.templates)}")
    click.echo(f"mix: {out}")


@tasks.command("check-oracles")
@click.argument("directory", required=False, type=click.Path(file_okay=False, exists=True))
@click.option("--mode", type=click.Choice(["harness", "bare", "both"]), default="harness", show_default=True,
              help="Replay through the harness (its default policies and kit), bare, or both.")
@click.option("--split", type=click.Choice(["dev", "evolve", "test"]), default=None, help="Only this split.")
def check_oracles_cmd(directory: str | None, mode: str, split: str | None) -> None:
    """Replay every task's oracle with a scripted planner and exit 1 if any golden path is blocked.

    DIRECTORY is a task folder (default: the bundled hand-written suite); a blocked path is one
    the verifier rejects, or one the run stopped before playing out.
    """
    import asyncio

    from ..evaluation.oracle_replay import replay_oracles
    from ..tasks import load_suite

    chosen = load_suite(split, directory=directory)  # type: ignore[arg-type]
    modes = ("harness", "bare") if mode == "both" else (mode,)
    blocked = asyncio.run(replay_oracles(chosen, modes=modes))  # type: ignore[arg-type]
    for b in blocked:
        click.echo(b.line())
    checked = sum(1 for t in chosen if t.oracle)
    click.echo(f"{checked} oracle(s) replayed ({', '.join(modes)}): {len(blocked)} blocked")
    if blocked:
        raise SystemExit(1)
