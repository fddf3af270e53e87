"""Reads and changes never share a batch: a planner looks at the state before it changes it.

Calls of one batch run at the same time, so a read beside a change can inform neither it nor
the planner's choice of it: the change was decided before the read's answer existed. Yet a
small planner writes exactly that for "check X; if ..., change Y" and for "do only what is
still missing": the read and every change in one batch, each change made whatever the read
returns (dev traces: a battery read beside the low-battery changes at 55 %, a settings read
beside switching on what was already on).

The policy splits the exposed tools into the declared read-only ones and the rest (an
undeclared tool, a tap, counts as a change) and asks for those two *batch groups*: the
decoding grammar then lets a batch take its calls from one group only, so the planner that
starts a batch with a read closes it with reads and decides on the changes with the answers
in front of it. Nothing is held for a planner that honours the grammar; for one that does
not (an endpoint without schema support), the changes of a mixed batch are held and its
reads run.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...contracts import ToolCall, ToolSpec, spec_for_call
from .base import ALLOW, BasePolicy, CallDecision, Hold, RunView

__all__ = ["ReadsApart"]


class ReadsApart(BasePolicy):
    """Ask the grammar to keep read-only calls and state changes in separate batches."""

    name = "reads_apart"

    def batch_groups(self, run: RunView) -> list[list[str]]:
        reads = [name for name, spec in run.tools.items() if spec.read_only]
        changes = [name for name, spec in run.tools.items() if not spec.read_only]
        return [reads, changes] if reads and changes else []

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        if spec.read_only:
            return ALLOW
        reads = [c.name for c in batch if (s := spec_for_call(run.tools, c)) is not None and s.read_only]
        if not reads:
            return ALLOW
        return Hold(
            "not_allowed",
            f"{call.name} was not run: it came in one batch with {', '.join(dict.fromkeys(reads))}, and calls of one "
            "batch run at the same time, so it could not depend on what they return. Their results are here now: "
            "send the changes the request still needs, on their own.",
        )
