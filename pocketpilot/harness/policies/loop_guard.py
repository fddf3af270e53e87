"""A planner going round in circles is told so, and told what is left rather than forced to stop.

A small planner loops: it repeats a batch that just worked (identical context after identical
context, until max_steps), cycles through a few calls, re-sends a call the world keeps
rejecting, re-runs one memory search, or delegates the same thing again. The guard notices
each of these. What it does next depends on what the request still names:

- if a state-changing tool the request's words match (by the tool's *declared* terms: setting
  key, description, enum values, never its name) has not run successfully yet, the notice
  names it as what remains and the planner keeps every action: forcing a ``finish`` there
  turned a loop into a wrong early finish;
- otherwise the next step is offered no tool call or delegation: it has to conclude.

The words of a recalled memory the request refers to count ("do my hike prep" means what the
memory says) only when the memory is the owner's standing wish by its provenance, as for the
scope guard (:func:`~pocketpilot.harness.recall.is_standing_wish`): naming a tool as "not done
yet" invites the call, and a memory that came from a tool result, an inference, another owner
or the shared store, or the caller's evidence text, must not invite what it could not grant.
A sub-agent's request is an instruction its parent's planner wrote: what remains there is what
both it and the user's request (with the owner's standing wishes about either) name; the
instruction narrows what remains, never widens it.

A call the world has rejected ``fail_limit`` times with identical arguments is held from then
on, until some state-changing call succeeds (the world changed, so it may pass now). Holds by
the harness itself (gates, guards, denials) do not count as the world's rejections. A planner
that sends a call this guard has already held once more is not reading the hold (dev traces ran
into max_steps that way, re-sending the held call with two reads beside it), and neither is one
whose batches go round a cycle with the same results each time, failures included: both are
stuck, as a repeat is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ...contracts import Delegate, MemorySearch, Notice, ToolCall, ToolCallAction, ToolSpec, spec_for_call
from ..scope import FUNCTION_WORDS, GENERIC_WORDS, Lexicon, content_stems, declared_terms
from .base import ALLOW, Advice, BasePolicy, CallDecision, Hold, RunView, StepReport
from .gates import held_result
from .repeat_delegation import ALREADY_DELEGATED
from .scope_guard import wishes_about

__all__ = ["LoopGuard"]

CONCLUDE = frozenset({"tool_call", "delegate"})


def _batch_key(calls: Sequence[ToolCall]) -> tuple[str, ...]:
    """A batch's identity: its calls' keys, order ignored (calls of one batch run together)."""
    return tuple(sorted(c.key() for c in calls))


def _changes_state(spec: ToolSpec | None) -> bool:
    """A declared state change: an undeclared effect (a tap, whose effect depends on what it
    hits) is not a step a request names, so it neither remains nor ends a repeat.
    """
    return spec is not None and spec.effect is not None and spec.changes_state


def _outcomes(report: StepReport) -> tuple[tuple[str, str], ...]:
    """A batch with what came of each call (ok, or the error code), order ignored: a cycle is
    the same calls meeting the same results again.
    """
    return tuple(sorted((c.key(), "ok" if r.ok else (r.error.code if r.error else "failed"))
                        for c, r in zip(report.calls, report.results, strict=False)))


class LoopGuard(BasePolicy):
    """Notice repeats, cycles and stubborn failures; name what remains or make the planner conclude.

    Args:
        fail_limit: identical world rejections of one call before it is held.
        max_cycle: the longest cycle of batches detected (2 catches A, B, A, B).
        function_words, generic_words: words that never tie a request to a tool (default: English).
    """

    name = "loop_guard"

    def __init__(self, *, fail_limit: int = 3, max_cycle: int = 3, function_words: Sequence[str] | None = None,
                 generic_words: Sequence[str] | None = None) -> None:
        fw = list(FUNCTION_WORDS if function_words is None else function_words)
        gw = list(GENERIC_WORDS if generic_words is None else generic_words)
        super().__init__(fail_limit=fail_limit, max_cycle=max_cycle, function_words=fw, generic_words=gw)
        self.lexicon = Lexicon.of(fw, gw)
        self.fail_limit, self.max_cycle = fail_limit, max_cycle
        self._succeeded: dict[tuple[str, ...], int] = {}
        self._trail: list[tuple[tuple[tuple[str, str], ...], bool]] = []
        """(each call's key with its outcome, fully succeeded) of each planner tool step."""
        self._rejected: Counter[str] = Counter()
        self._held_now: set[str] = set()
        """Calls this guard held in the step being routed."""
        self._held_before: set[str] = set()
        """Calls this guard held in earlier steps, since the world last changed."""

    # ------------------------------------------------------------------ hooks

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        n = self._rejected[call.key()]
        if n < self.fail_limit:
            return ALLOW
        self._held_now.add(call.key())
        return Hold("not_allowed", f"{call.name} with these exact arguments was rejected {n} times; the harness "
                                   "does not send it again. Change the arguments, use another tool, or ask_user.")

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        if report.by_harness:
            self._count(report, run)
            return None
        previous = run.steps[-1].action if run.steps else None
        if isinstance(report.action, ToolCallAction):
            return self._tool_step(report, run, previous)
        if isinstance(report.action, MemorySearch) and isinstance(previous, MemorySearch) and (
                previous.query.strip().casefold(), previous.tier) == (report.action.query.strip().casefold(), report.action.tier):
            # the same search re-ran four times in a row until max_steps
            return Advice(
                notices=[Notice("You just ran this search and got the same memories. Use them now: "
                                "act on the request or finish with the answer.", policy=self.name, code="repeated_search")],
                withhold=frozenset({"memory_search"}),
            )
        if isinstance(report.action, Delegate) and previous == report.action:
            # a repeat the repeat_delegation policy held as confirmed before: the earlier one worked, as a repeat
            # that ran would have (one it held for going unconfirmed the same way has its own code: it did not)
            worked = [r.ok or (r.error is not None and r.error.code == ALREADY_DELEGATED) for r in report.results]
            return self._stuck(run, report,
                               "You just delegated exactly this before and got its result: repeating it changes nothing.",
                               "repeated_delegation", succeeded=bool(worked) and all(worked))
        return None

    # ------------------------------------------------------------------ parts

    def _count(self, report: StepReport, run: RunView) -> None:
        changed = False
        for call, result in zip(report.calls, report.results, strict=False):
            if result.ok:
                changed = changed or _changes_state(spec_for_call(run.tools, call))
            elif result.error is not None and not run.said_by_harness(result.error.message):
                self._rejected[call.key()] += 1
        if changed:
            self._rejected.clear()
            self._held_before.clear()

    def _tool_step(self, report: StepReport, run: RunView, previous: object) -> Advice | None:
        resent = sorted({c.name for c in report.calls if c.key() in self._held_before})
        self._held_before |= self._held_now
        self._held_now = set()
        self._count(report, run)
        key = _batch_key(report.calls)
        all_ok = bool(report.results) and all(r.ok for r in report.results)
        repeats = isinstance(previous, ToolCallAction) and _batch_key(previous.calls) == key
        same = bool(self._trail) and self._trail[-1][0] == _outcomes(report)
        self._trail.append((_outcomes(report), all_ok))
        if resent:
            return self._stuck(run, report, f"You sent {', '.join(resent)} again with the exact arguments the harness "
                                            "already held back: it will not run.", "resent_held", succeeded=False)
        if report.held and repeats and run.steps and all(r.ok or held_result(r) for r in run.steps[-1].results):
            # the same batch, held back the same way again: the planner is not reading the hint
            return self._stuck(run, report, "You sent exactly the same batch again and it was held back again.",
                               "held_again", succeeded=False)
        if self._cycles(failing=True):
            return self._stuck(run, report, "You are going round in a circle: these calls repeat what the last "
                                            "steps already did, with the same failures.", "failing_cycle",
                               succeeded=False)
        if not all_ok:
            return None
        if repeats and same:  # a held call sent again that now runs (the user allowed it) is no repeat
            return self._stuck(run, report,
                               "You just ran exactly these calls, with the same results: repeating them changes nothing.",
                               "repeated_batch")
        if self._cycles():
            return self._stuck(run, report, "You are going round in a circle: these calls repeat what the last steps "
                                            "already did, with the same results.",
                               "cycle")
        earlier = self._succeeded.get(key)
        if earlier is not None:
            return Advice(notices=[Notice(
                f"Step {earlier + 1} already ran exactly these calls successfully; repeating them changes "
                "nothing. Do the part of the request that is still missing, or finish if it is all done.",
                policy=self.name, code="already_done",
            )])
        self._succeeded[key] = report.index
        return None

    def _cycles(self, *, failing: bool = False) -> bool:
        """Whether the last planner tool steps repeat a cycle of 2..max_cycle batches with the same outcomes.

        ``failing``: a cycle in which some call failed each time round (otherwise: only fully
        successful batches count, as a read loop).
        """
        for period in range(2, self.max_cycle + 1):
            tail = self._trail[-2 * period:]
            if (len(tail) == 2 * period and tail[:period] == tail[period:] and len({k for k, _ in tail}) > 1
                    and all(ok for _, ok in tail) != failing):
                return True
        return False

    def _stuck(self, run: RunView, report: StepReport, said: str, code: str, *, succeeded: bool = True) -> Advice:
        """``succeeded``: the repeated steps all worked, so nothing is unsafe or impossible and a
        refusal is no way out either (a sub-agent told "finish, ask_user or refuse" after
        reads that worked refused, and its parent with it). ``code``: the notice's, by what repeated.
        """
        remaining = self._remaining(run, report)
        if remaining:
            names = "; ".join(f"{s.name} ({s.description.splitlines()[0] if s.description else s.effect})" for s in remaining)
            return Advice(notices=[Notice(f"{said} Not done yet, by the request's words: {names}. Do that next if the "
                                          "request asks for it; finish only when everything it asks for is done.",
                                          policy=self.name, code=code)])
        if succeeded:
            return Advice(notices=[Notice(f"{said} Your next action must be finish, with the answer from these results "
                                          "and what you did (or ask_user if only the user can say how to go on).",
                                          policy=self.name, code=code)],
                          withhold=CONCLUDE | {"refuse"})
        return Advice(notices=[Notice(f"{said} Your next action must be finish (with the answer from these results), "
                                      "ask_user or refuse.", policy=self.name, code=code)], withhold=CONCLUDE)

    def _remaining(self, run: RunView, report: StepReport) -> list[ToolSpec]:
        """State-changing tools the request's words name that have not succeeded in this run."""
        done = {c.name for c, r in zip(report.calls, report.results, strict=False) if r.ok}
        for step in run.steps:
            if isinstance(step.action, ToolCallAction):
                done.update(c.name for c, r in zip(step.action.calls, step.results, strict=False) if r.ok)
        asked = self._asked(run, run.user_request)
        if run.delegated:  # the planner's instruction narrows what the user asked, never widens it
            asked &= self._asked(run, run.request)
        return [spec for name, spec in run.tools.items()
                if name not in done and _changes_state(spec) and declared_terms(spec, self.lexicon) & asked]

    def _asked(self, run: RunView, request: str) -> set[str]:
        """The words of ``request`` and of the owner's standing wishes about it ("do my hike prep":
        the wish says what); no other memory's words count, whatever they say.
        """
        asked = content_stems(request, self.lexicon)
        for line in wishes_about(run, request, self.lexicon):
            asked |= content_stems(line, self.lexicon)
        return asked
