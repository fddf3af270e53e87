"""`pocketpilot trace show FILE` renders a trace readably (or converts it); `trace html FILE`
writes a self-contained HTML replay of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import UsageError
from ..tracing.trace import episode_to_chat, read_trace
from .render import render_episode

__all__ = ["trace"]


@click.group("trace", help="Inspect episode traces.")
def trace() -> None:
    """Trace commands."""


@trace.command("show")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--openai", "as_openai", is_flag=True,
              help="Print the OpenAI chat request (model, messages, tools) as JSON instead.")
def show(file: str, as_openai: bool) -> None:
    """Render FILE step by step, with the verdict."""
    episode, complete = read_trace(file)
    if as_openai:
        click.echo(json.dumps(episode_to_chat(episode), indent=2, ensure_ascii=False))
    else:
        click.echo(render_episode(episode, complete))


@trace.command("html")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--out", type=click.Path(dir_okay=False), default=None,
              help="Output file (default: FILE with an .html suffix).")
def html(file: str, out: str | None) -> None:
    """Write FILE as one self-contained HTML replay (no network needed to view it)."""
    from ..tracing.replay import render_replay

    episode, complete = read_trace(file)
    target = Path(out) if out else Path(file).with_suffix(".html")
    page = render_replay(episode, complete)
    try:
        target.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{target}: cannot write: {exc.strerror}") from exc
    click.echo(f"{target} ({len(page.encode())} bytes, {len(episode.steps)} steps)")
