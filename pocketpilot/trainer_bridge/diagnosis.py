"""Attribute each failed episode to the model side or the harness side, with evidence steps.

Rule-based over the trace alone (no LLM): the verdict's criteria and their details, the tool
errors, the harness's repeated-failure notices, the stop reason, and the retrieved memories.
Every rule that fires adds a :class:`Finding` naming the steps that show it; the *primary*
attribution is the first finding in :data:`PRECEDENCE` (a missing skill before a missing tool,
since skills expose tools). Harness categories come first on purpose: when the harness withheld a tool or fed
back an empty error, the model's mistake that followed is a symptom, and blaming it would send the fix to the
trainer instead of η.

Rules (a failed episode has a verdict with ``success=False``):

Harness side
- ``wrong_tool_exposure`` — a failed criterion needs a tool the episode never had in its
  header ``tools``, or the planner called a real catalogue tool that was not exposed
  (``unknown_tool`` for a name in ``known_tools``).
- ``missing_skill`` — ``load_skill`` answered ``unknown_skill``, or a call was blocked with
  ``precondition_failed`` while no skill was loaded (the procedure never reached the planner).
- ``conflicting_skill`` — ``precondition_failed`` after two or more skills were loaded.
- ``retrieval_miss`` — a ``memory_search`` returned no memories and no later search did.
- ``stale_memory`` — a retrieved memory was superseded, a review candidate, or low-trust
  (provenance ``status``/``superseded_by``/``trust`` < 0.5).
- ``incomplete_feedback`` — a failed result carried no error, or an empty error message.

Model side
- ``routing`` — ``unknown_tool`` for a name outside ``known_tools`` (a hallucinated tool), or
  a failed ``no call`` criterion (a tool it should have left alone).
- ``argument_grounding`` — ``invalid_arguments`` / ``not_found`` errors, or a failed ``call``
  criterion whose tool *was* called successfully with other arguments.
- ``state_tracking`` — errors that mean the world was not as assumed (``conflict``,
  ``not_active``, ``not_connected``, ``bluetooth_off``, ``device_off``, …), or a failed
  ``nothing else changed`` criterion.
- ``recovery`` — a repeated-failure notice, the same failing call made twice, or the run
  stopped with ``planner_error`` (unparseable outputs in a row).
- ``decomposition`` — a failed ``order`` criterion (same batch, or wrong order), or the run
  exhausted its step/token/time budget without errors.
- ``premature_stop`` — the run stopped by finish / ask_user / refuse while a criterion that
  needs a call failed and that call was never attempted, or a stop criterion failed.

Each failed episode gets at least one finding; when no rule fires the attribution is
``unattributed`` (side ``unknown``) with the failed criteria as evidence.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..contracts import Episode, LoadSkill, MemorySearch, ToolCallAction

__all__ = [
    "HARNESS_CATEGORIES",
    "MODEL_CATEGORIES",
    "PRECEDENCE",
    "Category",
    "Diagnosis",
    "Finding",
    "Side",
    "diagnose",
    "diagnose_many",
]

Side = Literal["model", "harness", "unknown"]
Category = Literal[
    "decomposition",
    "routing",
    "argument_grounding",
    "state_tracking",
    "recovery",
    "premature_stop",
    "missing_skill",
    "conflicting_skill",
    "wrong_tool_exposure",
    "retrieval_miss",
    "stale_memory",
    "incomplete_feedback",
    "unattributed",
]
HARNESS_CATEGORIES: tuple[str, ...] = (
    "missing_skill",
    "conflicting_skill",
    "wrong_tool_exposure",
    "retrieval_miss",
    "stale_memory",
    "incomplete_feedback",
)
MODEL_CATEGORIES: tuple[str, ...] = (
    "routing",
    "argument_grounding",
    "state_tracking",
    "recovery",
    "decomposition",
    "premature_stop",
)
PRECEDENCE: tuple[str, ...] = HARNESS_CATEGORIES + MODEL_CATEGORIES
"""Order in which findings become the primary attribution."""

ARGUMENT_CODES = frozenset({"invalid_arguments", "not_found"})
STATE_CODES = frozenset(
    {"conflict", "not_active", "not_connected", "bluetooth_off", "device_off", "no_sms_app", "not_launchable"}
)
BUDGET_STOPS = frozenset({"max_steps", "max_tokens", "max_seconds"})
ORDER_KINDS = frozenset({"order", "delegation_order", "action_order"})
REPEATED_FAILURE = "repeated_failure"
"""The code of the repeat-failure policy's notice (``harness.policies.repeat_failure``): the
diagnosis reads notices by code, so rewording one never changes what it attributes."""


class Finding(BaseModel):
    """One rule that fired, with the steps that show it."""

    model_config = ConfigDict(frozen=True)

    side: Side
    category: Category
    steps: list[int] = Field(default_factory=list)
    detail: str
    tool: str | None = None
    """The tool the finding is about, when there is one (revisions target it)."""
    code: str | None = None
    """The structured cause it was read from: a tool error's code, a notice's code, or a
    criterion's kind (``criterion:call``); what revisions group by, never the detail's words."""
    policy: str | None = None
    """The policy whose notice the finding was read from, when it came from one."""


class Diagnosis(BaseModel):
    """The attribution of one episode."""

    model_config = ConfigDict(frozen=True)

    episode_id: str
    task_id: str | None
    eta_version: str | None
    failed: bool
    side: Side | None
    """None for an episode that did not fail."""
    category: Category | None
    findings: list[Finding] = Field(default_factory=list)

    @property
    def evidence_steps(self) -> list[int]:
        """Steps named by the primary finding."""
        return self.findings[0].steps if self.findings else []


def _side(category: str) -> Side:
    if category in HARNESS_CATEGORIES:
        return "harness"
    if category in MODEL_CATEGORIES:
        return "model"
    return "unknown"


def _find(out: list[Finding], category: Category, steps: Iterable[int], detail: str, tool: str | None = None,
          code: str | None = None, policy: str | None = None) -> None:
    out.append(Finding(side=_side(category), category=category, steps=sorted(set(steps)), detail=detail, tool=tool,
                       code=code, policy=policy))


def _tool_findings(episode: Episode, known: frozenset[str], exposed: set[str], out: list[Finding]) -> None:
    loaded = 0
    failures: Counter[str] = Counter()
    repeated: list[int] = []
    for step in episode.steps:
        if isinstance(step.action, LoadSkill) and step.results and step.results[0].ok:
            loaded += 1
        warned = next((n for n in step.notices if getattr(n, "code", "") == REPEATED_FAILURE), None)
        if warned is not None:
            _find(out, "recovery", [step.index], "the harness warned about a repeated identical failure",
                  code=REPEATED_FAILURE, policy=getattr(warned, "policy", "") or None)
        calls = step.action.calls if isinstance(step.action, ToolCallAction) else []
        for i, result in enumerate(step.results):
            if result.ok:
                continue
            call = calls[i] if i < len(calls) else None
            name = call.name if call else (step.action.kind if step.action else "?")
            if call is not None:
                failures[call.key()] += 1
                if failures[call.key()] == 2:
                    repeated.append(step.index)
            err = result.error
            if err is None or not err.message.strip():
                _find(out, "incomplete_feedback", [step.index], f"{name} failed without an error message", name,
                      code=err.code if err else None)
                continue
            code = err.code
            if code == "unknown_tool":
                if name in known and name not in exposed:
                    _find(out, "wrong_tool_exposure", [step.index], f"{name} exists but was not exposed", name, code)
                else:
                    _find(out, "routing", [step.index], f"called {name!r}, which is no tool", name, code)
            elif code == "unknown_skill":
                skill = step.action.name if isinstance(step.action, LoadSkill) else name
                _find(out, "missing_skill", [step.index], f"no loadable skill {skill!r}", skill, code)
            elif code == "precondition_failed":
                category: Category = "conflicting_skill" if loaded >= 2 else "missing_skill"
                _find(out, category, [step.index], f"{name} blocked by a precondition: {err.message}", name, code)
            elif code in ARGUMENT_CODES:
                _find(out, "argument_grounding", [step.index], f"{name}: {code}: {err.message}", name, code)
            elif code in STATE_CODES:
                _find(out, "state_tracking", [step.index], f"{name}: {code}: {err.message}", name, code)
    if repeated:
        _find(out, "recovery", repeated, "the same failing call was repeated", code="repeated_call")


def _memory_findings(episode: Episode, out: list[Finding]) -> None:
    searches = [s for s in episode.steps if isinstance(s.action, MemorySearch)]
    if searches:
        last = searches[-1]
        if not last.retrieved and all(not s.retrieved for s in searches):
            _find(out, "retrieval_miss", [s.index for s in searches], "memory_search returned no memories")
    for step in episode.steps:
        for mem in step.retrieved:
            prov = mem.provenance
            stale = (
                prov.get("status") in ("superseded", "candidate")
                or bool(prov.get("superseded_by"))
                or float(prov.get("trust", 1.0) or 0.0) < 0.5
            )
            if stale:
                _find(out, "stale_memory", [step.index], f"memory {mem.id} was stale or untrusted ({prov.get('status')})")


def _called_ok(episode: Episode, tool: str) -> list[int]:
    return [i for i, call, res in episode.tool_calls() if call.name == tool and res is not None and res.ok]


def _attempted(episode: Episode, tool: str) -> list[int]:
    return [i for i, call, _ in episode.tool_calls() if call.name == tool]


def _criteria_findings(episode: Episode, exposed: set[str], out: list[Finding]) -> None:
    assert episode.verdict is not None
    last = [episode.steps[-1].index] if episode.steps else []
    stopped_by_claim = episode.stop_reason in ("finish", "ask_user", "refuse")
    for c in episode.verdict.criteria:
        if c.passed:
            continue
        tool = c.tool
        kind = f"criterion:{c.kind}"
        if c.kind == "call" and tool and c.missing:
            if tool not in exposed:
                _find(out, "wrong_tool_exposure", last, f"{c.name}: needs {tool}, which was not exposed", tool, kind)
            elif stopped_by_claim:
                _find(out, "premature_stop", last, f"stopped by {episode.stop_reason} before calling {tool}", tool, kind)
        elif c.kind == "call" and tool:
            ok_steps = _called_ok(episode, tool)
            if ok_steps:
                _find(out, "argument_grounding", ok_steps, f"{c.name}: {c.detail}", tool, kind)
        elif c.kind in ORDER_KINDS:
            steps = [i for i, _, _ in episode.tool_calls()]
            _find(out, "decomposition", steps, f"{c.name}: {c.detail}", code=kind)
        elif c.kind == "no_call" and tool:
            _find(out, "routing", _attempted(episode, tool) or last, f"{c.name}: {c.detail}", tool, kind)
        elif c.kind == "stop":
            _find(out, "premature_stop", last, f"{c.name}: {c.detail}", code=kind)
        elif c.kind == "unchanged":
            steps = [i for i, _, res in episode.tool_calls() if res is not None and res.ok]
            _find(out, "state_tracking", steps, f"{c.name}: {c.detail}", code=kind)


def diagnose(episode: Episode, *, known_tools: Sequence[str] | None = None) -> Diagnosis:
    """Attribute ``episode`` (see the module docstring for the rules).

    Args:
        episode: A finished episode; one without a verdict or with a successful verdict is
            returned with ``failed=False`` and no findings.
        known_tools: Every tool that exists (exposed or not), to tell a withheld tool from a
            hallucinated one; defaults to the sandbox phone's catalogue.
    """
    header = episode.header
    base = {"episode_id": header.episode_id, "task_id": header.task_id, "eta_version": header.eta_version}
    if episode.verdict is None or episode.verdict.success:
        return Diagnosis(**base, failed=False, side=None, category=None)
    known = frozenset(known_tools) if known_tools is not None else _catalogue()
    exposed = {t.name for t in header.tools}
    findings: list[Finding] = []
    _tool_findings(episode, known, exposed, findings)
    _memory_findings(episode, findings)
    _criteria_findings(episode, exposed, findings)
    if episode.stop_reason == "planner_error":
        invalid = [s.index for s in episode.steps if s.action is None]
        _find(findings, "recovery", invalid, f"stopped with planner_error: {episode.stop_detail}")
    if episode.stop_reason in BUDGET_STOPS and not any(f.category in MODEL_CATEGORIES[:4] for f in findings):
        _find(findings, "decomposition", [s.index for s in episode.steps], f"budget exhausted: {episode.stop_detail}")
    if not findings:
        failed = [c for c in episode.verdict.criteria if not c.passed]
        detail = "; ".join(f"{c.name}: {c.detail}" for c in failed) or "verdict failed with no criteria"
        _find(findings, "unattributed", [s.index for s in episode.steps][-1:], detail)
    findings.sort(key=lambda f: PRECEDENCE.index(f.category) if f.category in PRECEDENCE else len(PRECEDENCE))
    primary = findings[0]
    return Diagnosis(**base, failed=True, side=primary.side, category=primary.category, findings=findings)


def diagnose_many(episodes: Iterable[Episode], *, known_tools: Sequence[str] | None = None) -> list[Diagnosis]:
    """Diagnose several episodes (the catalogue is looked up once)."""
    known = list(known_tools) if known_tools is not None else sorted(_catalogue())
    return [diagnose(ep, known_tools=known) for ep in episodes]


@functools.lru_cache(maxsize=1)
def _catalogue() -> frozenset[str]:
    # Imported lazily: the sandbox pulls in every app, which export alone never needs.
    from ..executor.sandbox import SandboxPhone

    return frozenset(SandboxPhone().tool_names())
