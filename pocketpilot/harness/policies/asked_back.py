"""An ``ask_user`` that only repeats the request is a failed step, not a question: it is sent back.

Asked about a long chat history, the 1.5B planner sent the user's own question back as
``ask_user`` in every run, although the message holding the answer was among the memories it
was shown in most of them. A question the user already asked gives the user nothing to
answer, so the run would end on nothing; the planner is told so and goes on (answers from
what it has, looks further, or finishes saying what it could not find).

"Repeats" is judged structurally, never by a word list, so it holds in any language: the
question and the request are normalised (case-folded, Unicode word tokens), and the question
repeats the request when at least ``min_share`` of its distinct tokens occur in the request.
A real clarification asks for something the request does not say ("which one", "what time"):
its new tokens keep the share low. Questions of fewer than ``min_tokens`` tokens are left
alone (too short to judge).
"""

from __future__ import annotations

import re
import unicodedata

from ...contracts import AskUser, Notice
from .base import Advice, BasePolicy, Hold, RunView, StepReport, StopAction

__all__ = ["ASKED_BACK", "AskedBack", "repeat_share"]

ASKED_BACK = "asked_back"
"""The code of this policy's notice: what readers match, never its words."""

_TOKEN = re.compile(r"\w+", re.UNICODE)


def _tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()))


def repeat_share(question: str, request: str) -> tuple[float, int]:
    """The share of the question's distinct tokens that occur in the request, and how many it has."""
    asked = _tokens(question)
    if not asked:
        return 0.0, 0
    return len(asked & _tokens(request)) / len(asked), len(asked)


class AskedBack(BasePolicy):
    """Send back an ``ask_user`` whose question repeats the request.

    Args:
        min_share: share of the question's tokens found in the request from which it repeats it.
        min_tokens: shorter questions are never judged repeats.
        limit: times per run a repeat is sent back; after that it stands.
        withhold: the step after a send-back offers no ``ask_user`` (told not to ask it back,
            a small planner asked the same again).
    """

    name = "asked_back"

    def __init__(self, *, min_share: float = 0.75, min_tokens: int = 3, limit: int = 1, withhold: bool = True) -> None:
        if not 0.0 < min_share <= 1.0:
            raise ValueError("asked_back min_share must be in (0, 1]")
        if min_tokens < 1 or limit < 1:
            raise ValueError("asked_back min_tokens and limit must be >= 1")
        super().__init__(min_share=min_share, min_tokens=min_tokens, limit=limit, withhold=withhold)
        self.min_share, self.min_tokens, self.limit, self.withhold = min_share, min_tokens, limit, withhold
        self._sent = 0
        self._withhold_next = False

    def repeats(self, question: str, request: str) -> bool:
        """Whether ``question`` only repeats ``request`` (see the module docstring)."""
        share, n = repeat_share(question, request)
        return n >= self.min_tokens and share >= self.min_share

    def on_stop(self, action: StopAction, run: RunView) -> Hold | None:
        if not isinstance(action, AskUser) or self._sent >= self.limit:
            return None
        if not self.repeats(action.question, run.request):
            return None
        self._sent += 1
        self._withhold_next = self.withhold
        return Hold(
            "not_allowed",
            "ask_user sent back: the question repeats the request, so the user has nothing to add.",
            notice=Notice("Answer it from the memories and results you have (finish with the answer); if they do not "
                          "hold it, look further with the actions you have, or finish saying what you could not find.",
                          policy=self.name, code=ASKED_BACK),
        )

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        if not self._withhold_next:
            return None
        self._withhold_next = False
        return Advice(withhold=frozenset({"ask_user"}))
