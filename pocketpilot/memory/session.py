"""Deprecated: the old name of :mod:`pocketpilot.memory.bound`.

``SessionMemory`` read as a session's working memory (its chat history); it is the persistent
store bound to one caller for one run, so it is :class:`~pocketpilot.memory.bound.BoundMemory`
now. Kept so code written against the old path keeps working; nothing inside pocketpilot
imports it.
"""

from __future__ import annotations

import warnings

from .bound import BoundMemory, run_off_loop

__all__ = ["BoundMemory", "SessionMemory", "run_off_loop"]

SessionMemory = BoundMemory
"""Deprecated alias of :class:`~pocketpilot.memory.bound.BoundMemory`."""

warnings.warn(
    "pocketpilot.memory.session is deprecated: import BoundMemory from pocketpilot.memory "
    "(or pocketpilot.memory.bound); SessionMemory is its old name",
    DeprecationWarning,
    stacklevel=2,
)
