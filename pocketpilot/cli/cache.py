"""`pocketpilot cache info|clear`: the saved prefix KV states that make a new process start warm."""

from __future__ import annotations

import click

from ..harness.planners.prefix_cache import PrefixCache

__all__ = ["cache"]


@click.group("cache", help="Saved prefix KV states (a new process restores them instead of re-evaluating).")
def cache() -> None:
    """Cache commands."""


@cache.command("info")
def info() -> None:
    """Where the prefix states are, how many, and their size (bounded, least recently used go first)."""
    store = PrefixCache()
    entries = store.entries()
    total = sum(size for _, size in entries)
    states = sum(1 for path, _ in entries if path.suffix == ".kv")
    click.echo(
        f"{store.root}: {states} prefix state(s), {len(entries) - states} vocabulary file(s), "
        f"{total / 1e6:.1f} MB of {store.max_bytes / 1e6:.0f} MB"
    )


@cache.command("clear")
def clear() -> None:
    """Remove every saved prefix state (the next run evaluates its prefix again, and saves it)."""
    freed = PrefixCache().clear()
    click.echo(f"cleared {freed / 1e6:.1f} MB")
