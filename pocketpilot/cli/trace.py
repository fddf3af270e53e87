"""`pocketpilot trace show FILE`: render a trace readably (or convert it)."""

from __future__ import annotations

import json

import click

from ..trace import episode_to_chat, read_trace
from .render import render_episode

__all__ = ["trace"]


@click.group("trace", help="Inspect episode traces.")
def trace() -> None:
    """Trace commands."""


@trace.command("show")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--openai", "as_openai", is_flag=True, help="Print the OpenAI chat request (model, messages, tools) as JSON instead.")
def show(file: str, as_openai: bool) -> None:
    """Render FILE step by step, with the verdict."""
    episode, complete = read_trace(file)
    if as_openai:
        click.echo(json.dumps(episode_to_chat(episode), indent=2, ensure_ascii=False))
    else:
        click.echo(render_episode(episode, complete))
