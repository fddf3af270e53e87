"""Deprecated: the old name of :mod:`pocketpilot.evaluation.task_episode`.

"Session" is the harness's :class:`~pocketpilot.harness.Session`; this module runs one task's
episode (which builds such a session), so it moved to :mod:`.task_episode` and
``run_task_session`` became :func:`~.task_episode.run_task_episode`. Kept so code written
against the old path keeps working; nothing inside pocketpilot imports it.
"""

from __future__ import annotations

import warnings

from .task_episode import (
    PRIOR_BUDGET,
    RECALL_K,
    HarnessKit,
    Mode,
    RunSettings,
    TaskUser,
    device_clock,
    load_harness_kit,
    recall_guidance,
    run_task_episode,
    task_config,
    task_guidance,
)

__all__ = [
    "PRIOR_BUDGET",
    "RECALL_K",
    "HarnessKit",
    "Mode",
    "RunSettings",
    "TaskUser",
    "device_clock",
    "load_harness_kit",
    "recall_guidance",
    "run_task_session",
    "task_config",
    "task_guidance",
]

run_task_session = run_task_episode
"""Deprecated alias of :func:`~pocketpilot.evaluation.task_episode.run_task_episode`."""

warnings.warn(
    "pocketpilot.evaluation.task_session is deprecated: import from pocketpilot.evaluation.task_episode "
    "(run_task_session is now run_task_episode)",
    DeprecationWarning,
    stacklevel=2,
)
