"""The in-process llama.cpp planner the model benches build from their flags.

One builder, so the benches that compare runs build the planner the same way: greedy
sampling, the catalogue entry's hash and quantization recorded, and llama.cpp's defaults
for everything a bench has no flag for. What differs between benches (threads, window,
``--reproducible``) is a parameter, never a copy.

It does not go through ``pocketpilot.cli._planner.build_planner``: that reads its flags from
the click context, which an argparse bench has none of, and pulls a missing model, which these
benches leave to ``pocketpilot models pull``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pocketpilot.harness import Planner

__all__ = ["llama_planner", "task_window"]

DEFAULT_WINDOW = 8192
"""The context window when neither the flag nor any task asks for one."""


def task_window(n_ctx: int | None, tasks: Iterable[Any]) -> int:
    """The window a bench runs ``tasks`` in: ``--n-ctx`` when given, else the largest a task asks.

    Args:
        n_ctx: the ``--n-ctx`` flag (None or 0: not given).
        tasks: the tasks to run; each may declare ``n_ctx`` (``TaskSpec.n_ctx``).
    """
    windows = [t.n_ctx for t in tasks if t.n_ctx is not None]
    return n_ctx or (max(windows) if windows else DEFAULT_WINDOW)


def llama_planner(model: str, *, max_tokens: int, n_ctx: int, threads: int | None,
                  reproducible: bool = False, prefix_cache: bool = True) -> Planner:
    """A greedy in-process planner over the catalogue model (or ``.gguf`` path) ``model``.

    Args:
        model: a catalogue name or alias, or a path to a ``.gguf`` file; never pulled here.
        max_tokens: most tokens one action may take.
        n_ctx: the context window, passed as given.
        threads: llama.cpp threads (None: all cores).
        reproducible: reuse only the stable prefix from the KV cache, so greedy output
            depends on the prompt alone.
        prefix_cache: restore the stable prefix from the disk cache (False: every process and
            every forgotten run evaluates it, as a cold start would).
    """
    # imported here: loading llama.cpp is slow, and --help or a scripted run needs none of it
    from pocketpilot.contracts import SamplerSettings
    from pocketpilot.harness.planners import LlamaCppPlanner
    from pocketpilot.models.store import ModelStore

    path, entry = ModelStore().resolve(model)
    return LlamaCppPlanner(path, sampler=SamplerSettings(temperature=0.0, max_tokens=max_tokens),
                           n_threads=threads, n_ctx=n_ctx, reproducible=reproducible,
                           sha256=entry.sha256 if entry else None,
                           quant_type=entry.quant_type if entry else None, prefix_cache=prefix_cache)
