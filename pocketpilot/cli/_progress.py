"""Progress on long work (model downloads, bench runs): a tqdm bar when stderr is a terminal.

Logs and CI output stay plain: without a TTY nothing animated is printed, only the lines the
commands always print.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

__all__ = ["interactive", "pull_progress", "task_bar"]


def interactive() -> bool:
    """Whether progress bars go anywhere a person watches."""
    return sys.stderr.isatty()


def pull_progress(name: str, packages: int, *, bars: bool | None = None) -> Callable[[str, int, int], None]:
    """A ``ModelStore.pull`` progress callback: bytes, total and rate while downloading, then assembly."""
    from tqdm import tqdm

    show = interactive() if bars is None else bars
    state: dict[str, Any] = {"bar": None, "stage": None, "assembled": -1}

    def bar(desc: str, total: int) -> Any:
        if state["bar"] is not None:
            state["bar"].close()
        state["stage"] = desc
        state["bar"] = tqdm(total=total or None, desc=desc, unit="B", unit_scale=True, unit_divisor=1024,
                            file=sys.stderr, leave=False, disable=not show)
        return state["bar"]

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "download":
            if done == 0:
                click.echo(f"downloading {name} ({packages} packages)…", err=True)
                bar(f"download {name}", total=0)
        elif stage == "bytes":
            current = state["bar"] if state["bar"] is not None else bar(f"download {name}", total)
            if show and total and current.total != total:
                current.total = total
            current.update(max(0, min(done, total or done) - current.n))
        elif stage == "assemble":
            current = state["bar"]
            if current is None or state["stage"] != "verify":
                current = bar("verify", total)
            current.update(max(0, done - current.n))
            pct = done * 100 // total if total else 0
            if not show and pct >= state["assembled"] + 25:
                state["assembled"] = pct
                click.echo(f"assembling and verifying: {pct}%", err=True)
            if total and done >= total:
                current.close()

    return progress


def task_bar(total: int, *, bars: bool | None = None) -> Any:
    """A bar of tasks done out of ``total`` with an ETA (tqdm computes it from the pace so far)."""
    from tqdm import tqdm

    show = interactive() if bars is None else bars
    return tqdm(total=total, desc="tasks", unit="task", file=sys.stderr, disable=not show, dynamic_ncols=True)
