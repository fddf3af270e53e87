"""A device setting that nothing the run was told or found out names stays as it is, unless the user says so.

The 1.5B planner's commonest harmful failure in the traces is the settings walk: it makes
the change it was asked for, then turns on Wi-Fi, Bluetooth, do-not-disturb and a brightness
level one step after another (a tool list reads to it like a to-do list). The guard reads
only declared semantics (a tool of effect ``setting``, its setting key, description and enum
values; see :mod:`pocketpilot.harness.scope`) against what grounds a change:

- the request;
- the world's own error messages ("bluetooth is off" grounds turning Bluetooth on), never the
  harness's own hold or denial messages, which name the call they held and would ground its
  identical retry;
- a recalled memory only when it is the owner's standing wish (by its provenance: what the
  owner said, ``user_statement``, from the owner's own store; see
  :func:`~pocketpilot.harness.recall.is_standing_wish`) and about the request (shares a content
  word with it). A memory that came from a tool result, an inference, another owner or the
  shared store is evidence and grants nothing, whatever it says; so is the caller's evidence
  text, which carries no provenance. A memory recalled as a distractor must not authorize a
  change the request never asked for either;
- what the run read: the fields of a successful read's result (``{"apn": {...}}`` grounds the
  APN setting), when it is a read of that one setting. A read whose fields name several
  settings (a settings screen, an accessibility panel) is a catalogue, like a skill
  procedure: it grounds none of them, or the walk would pass after any "read before a
  toggle";
- what the deployment prescribes: the session's own guidance (an operating policy) and the η
  notes in force, each entry when it is about the request, as a memory is. A skill's
  procedure never counts: it is the how-to of a whole class of requests and lists every
  setting of that class, whether the router preloaded it or the planner loaded it.

Reads and guidance name a setting strictly, by its declared key as a phrase
(:func:`~pocketpilot.harness.scope.names_setting`).

The walk comes *after* the asked change, so the guard starts holding only once the run has
made a change that the request (or a standing wish about it, or the world's error) asked for. Before
that, an unnamed setting is more likely one of the request's unstated prerequisites ("start
the engine" needs the doors locked and the brake pressed): a replay of an outside suite's
ground truth showed the guard holding exactly those.

A sub-agent's request is an instruction the planner wrote: a setting it names is grounded only
by what grounds its parent (the user's request and the owner's standing wishes, inherited),
the world's errors, what the sub-agent read and the guidance; and the sub-agent gets no grace
before an asked change, since it works after its parent's (a planner that read "turn Bluetooth
off" in a tool result must not get it done by delegating it).

A hold is answerable. The planner that sends the same held call again is not walking past a
hold it did not read so much as insisting the request needs it, and neither the planner nor
the guard should decide that alone: the second time, the guard asks whoever answers the
session's confirmations (:meth:`RunView.confirm`). Allowed, the call runs; denied, it ends as a
denied call (``confirmation_denied``) and every later send of it is denied without asking
again, by a sub-agent too (whose instruction, written by the planner, would otherwise ground
it). A call that needs confirmation anyway is left to the confirmation policy, so the user is
asked once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ...contracts import ToolCall, ToolCallAction, ToolSpec, spec_for_call
from ..recall import is_standing_wish
from ..scope import (
    ENGLISH,
    FUNCTION_WORDS,
    GENERIC_WORDS,
    Lexicon,
    content_stems,
    is_setting,
    names_setting,
    out_of_scope,
    result_fields,
)
from .base import ALLOW, Advice, Allow, BasePolicy, CallDecision, Hold, RunView, StepReport

__all__ = ["ScopeGuard", "wishes_about", "wishes_about_request"]


def _wish_lines(run: RunView) -> Iterator[str]:
    """The owner's standing wishes among the recalled memories and this run's memory searches,
    one line each. Provenance decides, never the wording: a tool result that says "the user
    always wants ..." is still a tool result.
    """
    hits = [*run.recalled, *(m for step in run.steps for m in step.retrieved)]
    for hit in hits:
        if is_standing_wish(hit, run.owner):
            yield from (line for line in hit.content.splitlines() if line.strip())


def wishes_about(run: RunView, text: str, lexicon: Lexicon = ENGLISH) -> Iterator[str]:
    """The owner's standing wishes that share a content word with ``text``; a distractor shares none."""
    about = content_stems(text, lexicon)
    for line in _wish_lines(run):
        if content_stems(line, lexicon) & about:
            yield line


def wishes_about_request(run: RunView, lexicon: Lexicon = ENGLISH) -> Iterator[str]:
    """The owner's standing wishes about the user's request (what "do my home routine" refers to)."""
    return wishes_about(run, run.user_request, lexicon)


def grounding(run: RunView, lexicon: Lexicon = ENGLISH) -> Iterator[str]:
    """What asks for a setting change in this run (lazy: only a setting call reads it).

    A sub-agent's own request is the planner's instruction: the user's request stands in for it.
    """
    yield run.user_request
    for step in run.steps:
        yield from (r.error.message for r in step.results
                    if r.error is not None and not run.said_by_harness(r.error.message))
    yield from wishes_about_request(run, lexicon)


def prescribed(run: RunView, lexicon: Lexicon = ENGLISH) -> Iterator[str]:
    """The entries of the deployment's guidance that are about the request (no skill procedures)."""
    about = content_stems(run.user_request, lexicon)
    for entry in run.prescribed:
        if content_stems(entry, lexicon) & about:
            yield entry


def read_fields(run: RunView) -> Iterator[list[str]]:
    """The fields of each successful read-only call's result in this run, one list per result."""
    for step in run.steps:
        if not isinstance(step.action, ToolCallAction):
            continue
        for call, result in zip(step.action.calls, step.results, strict=False):
            spec = spec_for_call(run.tools, call)
            if result.ok and spec is not None and (spec.read_only or spec.effect == "read"):
                yield result_fields(result.data)


def found_out(spec: ToolSpec, run: RunView, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether the guidance prescribes, or the run read, the setting ``spec`` changes.

    A read counts when it is a read *of that setting*: its fields name it and no other setting
    exposed now. One that names several (a settings screen) is a catalogue and grounds none.
    """
    if any(names_setting(spec, entry, lexicon) for entry in prescribed(run, lexicon)):
        return True
    others = [s for s in run.tools.values() if is_setting(s) and s.name != spec.name]
    for fields in read_fields(run):
        if any(names_setting(spec, f, lexicon) for f in fields) and not any(
                names_setting(s, f, lexicon) for s in others for f in fields):
            return True
    return False


def _denied_before(call: ToolCall, run: RunView) -> bool:
    """Whether this exact call was denied confirmation before this run started (a parent's steps)."""
    key = call.key()
    mine = {id(s) for s in run.steps}
    for step in run.gate_history:
        if id(step) in mine or not isinstance(step.action, ToolCallAction):
            continue
        for c, r in zip(step.action.calls, step.results, strict=False):
            if c.key() == key and r.error is not None and r.error.code == "confirmation_denied":
                return True
    return False


class ScopeGuard(BasePolicy):
    """Hold a setting call that nothing grounding names, once the run has made an asked change;
    sent again, ask the user.

    Args:
        function_words: words that never name a setting (default: English).
        generic_words: words too common to tie a memory to the request (default: English).
    """

    name = "scope_guard"

    def __init__(self, *, function_words: Sequence[str] | None = None, generic_words: Sequence[str] | None = None) -> None:
        fw = list(FUNCTION_WORDS if function_words is None else function_words)
        gw = list(GENERIC_WORDS if generic_words is None else generic_words)
        super().__init__(function_words=fw, generic_words=gw)
        self.lexicon = Lexicon.of(fw, gw)
        self._acted = False
        self._held: set[str] = set()
        """Keys of calls held once (sent again, the user is asked)."""
        self._answered: dict[str, bool] = {}
        """The user's answer per call key."""

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        for call, result in zip(report.calls, report.results, strict=False):
            spec = spec_for_call(run.tools, call)
            if not result.ok or spec is None or spec.read_only or spec.effect in (None, "read"):
                continue
            if not out_of_scope(spec, grounding(run, self.lexicon), self.lexicon):
                self._acted = True
        return None

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        if not is_setting(spec):
            return ALLOW
        if _denied_before(call, run):  # the user's no stands for a sub-agent too, whatever its instruction names
            return self._answer(call, False, "the user said no to this call earlier in this request")
        if not self._acted and not run.delegated:  # a sub-agent works after its parent's changes
            return ALLOW
        if not out_of_scope(spec, grounding(run, self.lexicon), self.lexicon) or found_out(spec, run, self.lexicon):
            return ALLOW
        key = call.key()
        if key in self._answered:
            return self._answer(call, self._answered[key], "asked before")
        if key not in self._held:
            self._held.add(key)
            return Hold(
                "not_allowed",
                f"{call.name}: neither the request, a memory about it, what this run read nor the guidance names "
                "this setting, so it stays as it is. Change only what was asked; if that is done, finish with what "
                "you changed (this is no reason to refuse). Only if the request cannot be done without it, send "
                "this call again: the user will be asked.",
            )
        effective, _ = await run.effect_of(call, spec)
        if effective.needs_confirmation:  # the confirmation policy asks the user about this call anyway
            return ALLOW
        allowed, reason = await run.confirm(call, spec)
        self._answered[key] = allowed
        return self._answer(call, allowed, reason)

    @staticmethod
    def _answer(call: ToolCall, allowed: bool, reason: str) -> CallDecision:
        if allowed:
            return Allow(notice=f"{call.name}: the user allowed a setting the request does not name ({reason})")
        return Hold(
            "confirmation_denied",
            f"{call.name}: the user did not allow changing a setting the request does not name ({reason}); it "
            "stays as it is. Finish with what you changed.",
            notice=f"confirmation denied for {call.name}: {reason}",
        )
