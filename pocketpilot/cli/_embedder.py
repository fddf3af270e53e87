"""The memory embedder for commands that run episodes: built once on first use, like the planner."""

from __future__ import annotations

import sys

import click

from ..memory import OnnxMiniLMEmbedder
from ..memory.build_embedder import default_model_dir, ensure_default_embedder, verify_manifest
from ..memory.errors import EmbedderUnavailableError

__all__ = ["default_embedder"]


def default_embedder(variant: str = "fp32") -> OnnxMiniLMEmbedder | None:
    """The default embedder, fetched and built the first time; None (said once, in one line) if it can't be."""
    if verify_manifest(default_model_dir()) is None:
        click.echo("building the memory embedder (one time)…", err=True)
    try:
        path = ensure_default_embedder(show_progress=sys.stderr.isatty())
        return OnnxMiniLMEmbedder(path, variant=variant)  # type: ignore[arg-type]
    except EmbedderUnavailableError as exc:
        click.echo(f"memory retrieval is keyword-only (no embedder): {exc}", err=True)
        return None
