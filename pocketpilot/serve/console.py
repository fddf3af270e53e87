"""The live console: one HTML page, no build step, no network assets (filled in below)."""

from __future__ import annotations

__all__ = ["console_html"]


def console_html() -> str:
    """The page."""
    return "<!doctype html><title>pocketpilot</title><p>pocketpilot serve</p>"
