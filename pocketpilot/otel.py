"""Moved to :mod:`pocketpilot.tracing.otel`; this path, which the README showed, keeps working."""

from .tracing.otel import *  # noqa: F403
from .tracing.otel import __all__ as __all__
