"""A destructive call on a record this run created is held once: the run may be undoing its own work.

The traces show a small planner creating the note it was asked for, reading it back, and
then deleting it. A destructive call (declared ``destructive`` or effect ``delete``) whose
record id (its declared ``id_arg``; every argument when it declares none) is the id a
create-effect call of this run returned is held the first time, with a notice; sent again
unchanged, it runs (a request that really asks to create and then remove gets it on the
second try). Nothing reads the request's words.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...contracts import ToolCall, ToolCallAction, ToolSpec, spec_for_call
from .base import ALLOW, BasePolicy, CallDecision, Hold, RunView

__all__ = ["UndoGuard"]


class UndoGuard(BasePolicy):
    """Hold, once per call, a destructive call on a record this run created."""

    name = "undo_guard"

    def __init__(self) -> None:
        super().__init__()
        self._warned: set[str] = set()

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        if not (spec.destructive or spec.effect == "delete") or call.key() in self._warned:
            return ALLOW
        created: dict[str, int] = {}
        for step in run.steps:
            if not isinstance(step.action, ToolCallAction):
                continue
            for c, r in zip(step.action.calls, step.results, strict=False):
                made = spec_for_call(run.tools, c)
                if r.ok and made is not None and made.effect == "create" and isinstance(r.data, dict) and "id" in r.data:
                    created.setdefault(str(r.data["id"]), step.index)
        args = [call.arguments.get(spec.id_arg)] if spec.id_arg else list(call.arguments.values())
        for value in args:
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) in created:
                self._warned.add(call.key())
                return Hold(
                    "not_allowed",
                    f"{call.name} would undo step {created[str(value)] + 1}: {value} was created by this run. If the "
                    "request is done, finish; only if the request asks to remove it, send this call again.",
                )
        return ALLOW
