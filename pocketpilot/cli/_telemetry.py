"""``--otel console|otlp[=URL]``: OpenTelemetry spans of a CLI run (the ``otel`` extra)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..errors import UsageError
from ..harness.observer import RunObserver

__all__ = ["otel_option", "start_telemetry"]


def otel_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--otel`` flag."""
    return click.option(
        "--otel", "otel", default=None, metavar="console|otlp[=URL]",
        help="Emit OpenTelemetry spans (GenAI conventions): JSON on stderr, or OTLP/HTTP to a collector "
             "(default http://localhost:4318, or $OTEL_EXPORTER_OTLP_ENDPOINT). Needs pocketpilot[otel].",
    )(fn)


def start_telemetry(spec: str | None) -> RunObserver | None:
    """The observer for ``--otel SPEC``; its spans are flushed when the command ends (also on error).

    Parsed before the model loads, so a missing extra or a bad value costs nothing.

    Raises:
        UsageError: an unknown SPEC, a bad URL, or the extra is not installed.
    """
    if spec is None:
        return None
    kind, _, url = spec.partition("=")
    from ..tracing import otel

    if kind == "console" and not url:
        exporter = otel.console_exporter()
    elif kind == "otlp":
        exporter = otel.otlp_exporter(url or None)
    else:
        raise UsageError(f"--otel takes console, otlp or otlp=URL, not {spec!r}")
    provider = otel.tracer_provider([exporter])
    click.get_current_context().call_on_close(provider.shutdown)
    return otel.OtelObserver(provider)
