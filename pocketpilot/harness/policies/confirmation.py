"""Calls that need the user's yes ask for it: the last word on every call, in every mode.

Which calls ask is decided by their declared semantics, never their names (destructive, or
effect send, delete or purchase: ``ToolSpec.needs_confirmation``), and for a UI action on a
device by what it would hit (a tap on "Send" is a send). It runs after every other policy,
so the user is asked only about calls that would otherwise run.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...contracts import ToolCall, ToolSpec
from .base import ALLOW, Allow, BasePolicy, CallDecision, Hold, RunView

__all__ = ["Confirmation"]


class Confirmation(BasePolicy):
    """Ask the session's confirmation policy about calls that need confirmation."""

    name = "confirmation"
    safety = True

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        effective, detail = await run.effect_of(call, spec)
        if not effective.needs_confirmation:
            return ALLOW
        allowed, reason = await run.confirm(call, effective)
        what = f"{call.name} is {effective.effect_label()}{f' ({detail})' if detail else ''}"
        if not allowed:
            return Hold(
                "confirmation_denied",
                f"{what}: it changes something that cannot be undone and was not confirmed ({reason})",
                notice=f"confirmation denied for {what}: {reason}",
            )
        return Allow(notice=f"confirmation granted for {what}: {reason}")
