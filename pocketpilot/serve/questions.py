"""Confirmations and the planner's questions as round trips through the client's own UI.

A call that needs the user's yes (``ToolSpec.needs_confirmation``, decided by the harness's
:class:`~pocketpilot.harness.policies.Confirmation` policy from declared semantics) pauses the
run at that call: :class:`ServeConfirmation` posts a pending question to the session's event
stream and waits for ``POST .../answers``. Nobody answering within the timeout is a "no",
and the run says so (the denial's reason, in the step's notice and the run's stop detail,
names the timeout). An ``ask_user`` stop becomes a pending question too; its answer is the
session's next request, so the run continues as a conversation with the question in view.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..contracts import ToolCall, ToolSpec
from .errors import Conflict, Invalid
from .events import EventLog

__all__ = ["Answer", "Question", "QuestionBoard", "ServeConfirmation"]

CONFIRM_OPTIONS = ("allow", "deny")


class Question(BaseModel):
    """What the client's UI shows: a confirmation to allow or deny, or the planner's question."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: Literal["confirm", "ask_user"]
    text: str
    turn: int
    call: ToolCall | None = None
    """The call waiting for a yes (confirm)."""
    semantics: dict[str, Any] | None = None
    """The call's effective declared semantics (effect, destructive, ...), for the dialog."""
    options: list[str] = Field(default_factory=list)
    timeout_s: float | None = None
    """A confirmation not answered within this is denied."""


class Answer(BaseModel):
    """``POST /v1/sessions/{id}/answers``: the answer to one pending question."""

    model_config = ConfigDict(extra="forbid")

    question_id: str = Field(min_length=1, max_length=64)
    answer: str = Field(min_length=1, max_length=4000)
    """``allow`` or ``deny`` for a confirmation; the user's words for a question."""


class QuestionBoard:
    """The pending questions of one session."""

    def __init__(self, log: EventLog) -> None:
        self._log = log
        self._pending: dict[str, tuple[Question, asyncio.Future[str] | None]] = {}

    def pending(self) -> list[Question]:
        """The questions waiting for an answer, oldest first."""
        return [q for q, _ in self._pending.values()]

    def _post(self, question: Question, waiter: asyncio.Future[str] | None) -> None:
        self._pending[question.id] = (question, waiter)
        self._log.append("question", question.model_dump(mode="json"))

    async def confirm(self, call: ToolCall, spec: ToolSpec, turn: int, timeout_s: float) -> tuple[bool, str]:
        """Ask whether ``call`` may run; returns the answer and why."""
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        question = Question(id=f"q_{uuid.uuid4().hex[:16]}", kind="confirm", turn=turn, call=call,
                            text=f"{call.name} is {spec.effect_label()}: allow?", semantics=spec.semantics(),
                            options=list(CONFIRM_OPTIONS), timeout_s=timeout_s)
        self._post(question, waiter)
        try:
            async with asyncio.timeout(timeout_s):
                answer = await waiter
        except TimeoutError:
            self._settle(question, "deny", "timeout")
            return False, f"no answer within {timeout_s:g}s: denied"
        except asyncio.CancelledError:
            self._settle(question, "deny", "cancelled")
            raise
        return answer == "allow", f"{answer} by the client"

    def ask_user(self, text: str, turn: int) -> Question:
        """Post the planner's question; its answer becomes the next request (no waiter)."""
        question = Question(id=f"q_{uuid.uuid4().hex[:16]}", kind="ask_user", text=text, turn=turn)
        self._post(question, None)
        return question

    def _settle(self, question: Question, answer: str, by: str) -> None:
        if self._pending.pop(question.id, None) is not None:
            self._log.append("answer", {"question_id": question.id, "answer": answer, "by": by})

    def answer(self, answer: Answer) -> Question:
        """Record the client's answer.

        Raises:
            Conflict: no such question pending (never asked, answered, timed out).
            Invalid: a confirmation answered with something other than allow or deny.
        """
        entry = self._pending.get(answer.question_id)
        if entry is None:
            raise Conflict(f"question {answer.question_id!r} is not pending", "not_pending")
        question, waiter = entry
        if question.kind == "confirm":
            if answer.answer not in CONFIRM_OPTIONS:
                raise Invalid(f"a confirmation is answered with {' or '.join(CONFIRM_OPTIONS)}, not {answer.answer!r}")
            if waiter is not None and not waiter.done():
                waiter.set_result(answer.answer)
        self._settle(question, answer.answer, "client")
        return question

    def drop_questions(self, by: str) -> None:
        """Settle every pending ``ask_user`` question (a new request superseded it)."""
        for question, waiter in list(self._pending.values()):
            if waiter is None:
                self._settle(question, "", by)


class ServeConfirmation:
    """The session's confirmation policy: a pending question the client answers, or a timeout.

    ``reason`` is read by the harness right after each answer (no await in between), so
    calls of one batch asking at once each get their own reason.
    """

    reason = "asked the client"

    def __init__(self, board: QuestionBoard, timeout_s: float) -> None:
        self._board, self.timeout_s = board, timeout_s
        self.turn = 0
        """The run asking (set by the session as each run starts)."""
        self.catch_up: Callable[[], Awaitable[None]] | None = None
        """Brings the stream up to the trace file (set by the session)."""

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        """Post the question and wait for the answer (or the timeout).

        The trace's records so far go to the stream first: a client sees the step before the
        question that follows it, never the other way round.
        """
        if self.catch_up is not None:
            await self.catch_up()
        allowed, self.reason = await self._board.confirm(call, spec, self.turn, self.timeout_s)
        return allowed
