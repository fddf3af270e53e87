"""`--exposure` and `--tool-k`: which tools a task's run holds, and how many a step shows (issue 35).

Both are checked here, before a model loads: an unknown exposure or a K below 1 is one line
on stderr and exit 2 (the options take plain values so click's multi-line usage error never
shows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..errors import UsageError
from ..tasks.run import EXPOSURES

__all__ = ["check_exposure", "exposure_options"]


def exposure_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--exposure task|phone`` and ``--tool-k K`` to a command."""
    fn = click.option("--tool-k", "tool_k", type=int, default=None,
                      help="Harness: show at most K tools a step, chosen by retrieval over the tools' "
                           "text (default: η's tool_retrieval setting; without one, retrieval only when the "
                           "tool list outgrows the tools budget).")(fn)
    return click.option("--exposure", default="task", show_default=True,
                        help="task: only the apps a task names; phone: every app of its world installed, "
                             "nothing said about which the task needs (bare gets every tool: raise "
                             "--n-ctx to fit them).")(fn)


def check_exposure(exposure: str, tool_k: int | None) -> tuple[str, int | None]:
    """The flags, checked.

    Raises:
        UsageError: an unknown exposure, or K below 1.
    """
    if exposure not in EXPOSURES:
        raise UsageError(f"unknown exposure {exposure!r}; use one of: {', '.join(EXPOSURES)}")
    if tool_k is not None and tool_k < 1:
        raise UsageError(f"--tool-k must be at least 1, not {tool_k}")
    return exposure, tool_k
