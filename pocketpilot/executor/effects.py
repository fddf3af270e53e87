"""The protocol an executor offers when a call's effect is known only at the moment it runs.

A tool's spec declares what it does; a tap declares nothing, because on a device it is what
the tapped element triggers (a tap on "Send" is a send). An executor that can tell classifies
each call *before* it runs, and the harness confirms by that classification: otherwise
``compose_sms`` followed by ``tap_element(text="Send")`` would send what ``send_sms`` may not.
The harness imports this protocol, never an executor's internals.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..contracts import ToolCall, ToolEffect

__all__ = ["ClassifiesEffects"]


@runtime_checkable
class ClassifiesEffects(Protocol):
    """An executor that says what a call would do before it runs it."""

    async def effect_of(self, call: ToolCall) -> ToolEffect | None:
        """The call's effect now (None: the executor does not know the tool; its spec stands).

        A classification is a promise about the very next run of ``call``: an executor whose
        target changes in between (the screen moved on) refuses to act on a different effect
        rather than perform it unconfirmed.

        Raises:
            ExecutorError: the device is gone (as ``call`` would raise).
        """
        ...
