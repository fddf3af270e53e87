"""Public outside suites run through pocketpilot's world/tool plug-in, as a development signal.

A suite's data and checker come from its own published package at run time (never committed
here); the adapter declares what pocketpilot needs that the suite does not say itself (tool
semantics) and drives the suite's tasks through :class:`~pocketpilot.harness.Session`.
"""

from __future__ import annotations

from .bfcl import BfclSuite, BfclTask, BfclWorld, TurnCheck
from .errors import SuiteDataError, SuiteError, SuiteUnavailableError
from .wheel import BfclWheel, default_cache, fetch_wheel

__all__ = [
    "BfclSuite",
    "BfclTask",
    "BfclWheel",
    "BfclWorld",
    "SuiteDataError",
    "SuiteError",
    "SuiteUnavailableError",
    "TurnCheck",
    "default_cache",
    "fetch_wheel",
]
