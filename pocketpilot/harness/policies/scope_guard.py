"""A device setting that nothing the run was told or found out names stays as it is.

The 1.5B planner's commonest harmful failure in the traces is the settings walk: it makes
the change it was asked for, then turns on Wi-Fi, Bluetooth, do-not-disturb and a brightness
level one step after another (a tool list reads to it like a to-do list). The guard reads
only declared semantics (a tool of effect ``setting``, its setting key, description and enum
values; see :mod:`pocketpilot.harness.scope`) against what grounds a change:

- the request;
- the world's own error messages ("bluetooth is off" grounds turning Bluetooth on), never the
  harness's own hold or denial messages, which name the call they held and would ground its
  identical retry;
- a recalled memory only when it is about the request (shares a content word with it): a
  memory recalled as a distractor must not authorize a change the request never asked for.

The walk comes *after* the asked change, so the guard starts holding only once the run has
made a change that is in scope. Before that, an unnamed setting is more likely one of the
request's unstated prerequisites ("start the engine" needs the doors locked and the brake
pressed): a replay of an outside suite's ground truth showed the guard holding exactly those.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ...contracts import ToolCall, ToolSpec
from ..scope import ENGLISH, FUNCTION_WORDS, GENERIC_WORDS, Lexicon, content_stems, out_of_scope
from .base import ALLOW, Advice, BasePolicy, CallDecision, Hold, RunView, StepReport

__all__ = ["ScopeGuard"]


def _memory_lines(run: RunView) -> Iterator[str]:
    """Recalled and retrieved memories, one per line (a recall block lists several)."""
    for text in run.evidence:
        yield from (line for line in text.splitlines() if line.strip())
    for step in run.steps:
        yield from (m.content for m in step.retrieved)


def grounding(run: RunView, lexicon: Lexicon = ENGLISH) -> Iterator[str]:
    """What may ground a setting change in this run (lazy: only a setting call reads it)."""
    yield run.request
    for step in run.steps:
        yield from (r.error.message for r in step.results
                    if r.error is not None and not run.said_by_harness(r.error.message))
    about = content_stems(run.request, lexicon)
    for line in _memory_lines(run):
        if content_stems(line, lexicon) & about:
            yield line


class ScopeGuard(BasePolicy):
    """Hold a setting call that nothing grounding names, once the run has made a grounded change.

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

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        for call, result in zip(report.calls, report.results):
            spec = run.tools.get(call.name)
            if not result.ok or spec is None or spec.read_only or spec.effect in (None, "read"):
                continue
            if not out_of_scope(spec, grounding(run, self.lexicon), self.lexicon):
                self._acted = True
        return None

    async def before_call(self, call: ToolCall, spec: ToolSpec, batch: Sequence[ToolCall], run: RunView) -> CallDecision:
        if not self._acted or not out_of_scope(spec, grounding(run, self.lexicon), self.lexicon):
            return ALLOW
        return Hold(
            "not_allowed",
            f"{call.name}: neither the request nor any memory about it mentions this setting, so it stays "
            "as it is. Change only what was asked; if that is done, finish with what you changed (this is no "
            "reason to refuse).",
        )
