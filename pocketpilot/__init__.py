"""pocketpilot: an on-device agent runtime and harness SDK for mobile planner agents.

The top-level API is deliberately small; subpackages hold the rest.
"""

from __future__ import annotations

import logging

from ._version import __version__ as __version__
from .contracts import (
    Action,
    Episode,
    Step,
    ToolCall,
    ToolResult,
    ToolSpec,
    Verdict,
)
from .errors import (
    ExecutorError,
    MemoryStoreError,
    PlannerError,
    PocketPilotError,
    ToolFailure,
    UsageError,
)
from .executor.tools import ToolRegistry, tool
from .harness.session import HarnessConfig, Session

__all__ = [
    "Action",
    "Episode",
    "ExecutorError",
    "HarnessConfig",
    "MemoryStoreError",
    "PlannerError",
    "PocketPilotError",
    "Session",
    "Step",
    "ToolCall",
    "ToolFailure",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "UsageError",
    "Verdict",
    "tool",
]

logging.getLogger("pocketpilot").addHandler(logging.NullHandler())
