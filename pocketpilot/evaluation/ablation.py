"""The policy ablation: every default policy on and off, paid for only where the policy acted.

A policy acts on a run only through its hooks' outcomes (a hold, a rewrite, a stop, a notice,
advice, a stop action sent back), and each step records the policies whose outcome changed it
(``Step.interventions``). Under greedy decoding a policy named on no step of a run could not
have changed that run: without it, the planner sees the same contexts and makes the same
choices. So the run with the whole set is the baseline, and for each ablatable policy only the
tasks it acted on are run again without it; on every other task, with and without are the same
run. A policy that shapes batches (:class:`~pocketpilot.harness.policies.ShapesBatches`, none of
the default set) changes the decoding grammar without a step saying so: every task is rerun
without it. :func:`run_ablation` can check the assumption too (``verify_untouched``): it reruns some
tasks a policy never acted on without it and compares the actions.

A policy's cost is the paired difference on the tasks it acted on (the same as over the whole
selection): tasks passed without it minus tasks passed with it. A positive cost means the
policy loses tasks, and it leaves the default set or is fixed; :meth:`AblationReport.ablation`
is the ``{policy: cost}`` mapping
:func:`pocketpilot.trainer_bridge.candidates.policy_off_candidates` takes. The safety policies
(gates, confirmation) are never ablated: every set runs them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..contracts import Episode
from ..errors import TraceError, UsageError
from ..harness import Planner
from ..harness.policies import ShapesBatches, describe, in_force
from ..memory import Embedder
from ..policy_registry import registered
from ..tasks import TaskSpec
from .bench_runs import OutcomeLog
from .compare import TaskOutcome, run_task
from .task_episode import HarnessKit, RunSettings

__all__ = [
    "ABLATION_LOG",
    "ABLATION_SCHEMA",
    "AblationReport",
    "AblationRow",
    "Baseline",
    "PolicyResult",
    "Untouched",
    "ablatable",
    "acted",
    "baseline_from_traces",
    "check_policies",
    "load_ablation",
    "run_ablation",
    "verdict",
    "without_policy",
]

ABLATION_SCHEMA = "pocketpilot.bench.ablation/1"
"""Version tag of the ablation JSON; bump it when fields change meaning."""

KEEP, COSTS, UNUSED = "keep", "costs tasks: remove or fix", "never intervened"

PlannerFor = Callable[[TaskSpec, str | None], Planner]
"""The planner for a task run without the named policy (None: the baseline)."""


# --------------------------------------------------------------------------- what a run says


def acted(episode: Episode) -> dict[str, list[int]]:
    """Policy name → the indices of the steps it changed, a sub-agent's steps under the step that
    delegated (the sub-agent runs the same set).
    """
    out: dict[str, list[int]] = {}

    def visit(ep: Episode, at: int | None) -> None:
        for step in ep.steps:
            index = step.index if at is None else at
            for name in step.interventions:
                seen = out.setdefault(name, [])
                if index not in seen:
                    seen.append(index)
            for child in step.children:
                visit(child, index)

    visit(episode, None)
    return out


def _actions(episode: Episode) -> list[Any]:
    """Every action of the run in order (a sub-agent's after the step that delegated), as JSON."""
    out: list[Any] = []
    for step in episode.steps:
        out.append(step.action.model_dump(mode="json") if step.action is not None else None)
        for child in step.children:
            out += _actions(child)
    return out


# --------------------------------------------------------------------------- which policies


def ablatable(kit: HarnessKit) -> list[str]:
    """The policies of η's set that an ablation may leave out (all but the safety ones), in order.

    Raises:
        UsageError: the kit has no η (its policy set is what is ablated).
    """
    if kit.eta is None:
        raise UsageError("the ablation leaves policies out of η's set: the kit needs an η")
    known = registered()
    return [p.name for p in kit.eta.policies if p.name in known and not known[p.name].safety]


def check_policies(asked: Sequence[str], kit: HarnessKit) -> list[str]:
    """``asked`` (empty: every ablatable policy), checked against the registry and η's set.

    Raises:
        UsageError: an unknown name, a safety policy, or a policy η's set does not run.
    """
    can = ablatable(kit)
    if not asked:
        return can
    known = registered()
    for name in asked:
        if name not in known:
            raise UsageError(f"unknown policy {name!r}; ablatable: {', '.join(can)}")
        if known[name].safety:
            raise UsageError(f"{name} is a safety policy: every set runs it, so it is not ablated")
        if name not in can:
            raise UsageError(f"{name} is not in η's policy set; ablatable: {', '.join(can)}")
    return list(dict.fromkeys(asked))


def without_policy(kit: HarnessKit, name: str) -> HarnessKit:
    """The kit whose η runs every policy of its set but ``name`` (skills, notes and settings unchanged)."""
    assert kit.eta is not None
    eta = kit.eta.model_copy(update={"policies": [p for p in kit.eta.policies if p.name != name]})
    return HarnessKit(kit.library, eta=eta)


def _set_of(kit: HarnessKit) -> list[dict[str, Any]]:
    """The policies a session under ``kit``'s η runs, in the trace header's form."""
    assert kit.eta is not None
    return describe(in_force(kit.eta.build_policies()))


# --------------------------------------------------------------------------- records


class Baseline(BaseModel):
    """One task run with the whole set: its outcome and the policies that acted on it."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    group: str
    success: bool
    stop_reason: str | None
    steps: int
    acted: dict[str, list[int]] = Field(default_factory=dict)
    """Policy → the steps it changed."""
    trace: str | None = None
    actions: list[Any] = Field(default_factory=list, exclude=True)
    """The run's actions (compared by the untouched check; not written to the report)."""
    planner: dict[str, Any] | None = Field(default=None, exclude=True)
    """The planner that ran it, as its trace header says (not written to the report)."""


class AblationRow(BaseModel):
    """One task a policy acted on, run with and without it."""

    model_config = ConfigDict(frozen=True)

    policy: str
    task_id: str
    group: str
    passed_with: bool
    passed_without: bool
    stop_with: str | None
    stop_without: str | None
    steps_with: int
    steps_without: int
    acted_steps: list[int]
    """The steps of the baseline run the policy changed."""
    trace_without: str | None = None


class PolicyResult(BaseModel):
    """One policy's line of the table."""

    model_config = ConfigDict(frozen=True)

    policy: str
    intervened: int
    """Tasks it acted on (the only ones run again without it)."""
    passed_with: int
    passed_without: int
    gained: int
    """Tasks that pass only without it."""
    lost: int
    """Tasks that pass only with it."""
    cost: int
    """``passed_without - passed_with``: tasks the policy costs (negative: tasks it earns)."""
    verdict: str


class Untouched(BaseModel):
    """A task a policy never acted on, run again without it: the exactness check."""

    model_config = ConfigDict(frozen=True)

    policy: str
    task_id: str
    identical: bool
    """Same actions and the same verdict as the baseline."""
    first_difference: int | None = None
    """The index of the first action that differs (None: identical, or only the verdict differs)."""
    detail: str = ""


def verdict(intervened: int, cost: int) -> str:
    """``keep``, ``costs tasks: remove or fix`` (cost above zero), or ``never intervened``."""
    if intervened == 0:
        return UNUSED
    return COSTS if cost > 0 else KEEP


def summarise(policy: str, rows: Sequence[AblationRow]) -> PolicyResult:
    """The policy's line from its rows (the tasks it acted on)."""
    mine = [r for r in rows if r.policy == policy]
    with_, without = sum(r.passed_with for r in mine), sum(r.passed_without for r in mine)
    cost = without - with_
    return PolicyResult(policy=policy, intervened=len(mine), passed_with=with_, passed_without=without,
                        gained=sum(r.passed_without and not r.passed_with for r in mine),
                        lost=sum(r.passed_with and not r.passed_without for r in mine),
                        cost=cost, verdict=verdict(len(mine), cost))


class AblationReport(BaseModel):
    """The whole ablation: the baseline, the reruns, one line per policy, the exactness check."""

    model_config = ConfigDict(frozen=True)

    split: str | None = None
    planner: dict[str, Any] = Field(default_factory=dict)
    policies: list[str]
    """The policies ablated, in η's order."""
    baseline: list[Baseline]
    rows: list[AblationRow] = Field(default_factory=list)
    untouched: list[Untouched] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)

    def results(self) -> list[PolicyResult]:
        """One line per ablated policy, in η's order."""
        return [summarise(p, self.rows) for p in self.policies]

    def ablation(self) -> dict[str, int]:
        """``{policy: cost}``: what :func:`~pocketpilot.trainer_bridge.candidates.policy_off_candidates` takes."""
        return {r.policy: r.cost for r in self.results()}

    def mismatches(self) -> list[Untouched]:
        """Untouched reruns that did not repeat the baseline (the exactness assumption failed there)."""
        return [u for u in self.untouched if not u.identical]

    def to_json(self) -> dict[str, Any]:
        """The report as JSON: the table's lines, the ``ablation`` mapping and every row."""
        return {"schema": ABLATION_SCHEMA, **self.model_dump(mode="json"),
                "results": [r.model_dump(mode="json") for r in self.results()], "ablation": self.ablation()}

    def markdown(self) -> str:
        """The table, the baseline's total, and the exactness check's line."""
        passed = sum(b.success for b in self.baseline)
        lines = [f"{len(self.baseline)} task(s){f' of the {self.split} split' if self.split else ''}, "
                 f"{passed} passed with every policy. Each policy's tasks are the ones it acted on "
                 "(the only ones it could change), run again without it.", "",
                 "| policy | tasks it acted on | passed with | passed without | net cost (without − with) | verdict |",
                 "|---|---|---|---|---|---|"]
        for r in self.results():
            lines.append(f"| {r.policy} | {r.intervened} | {r.passed_with} | {r.passed_without} | {r.cost:+d} | "
                         f"{r.verdict} |")
        if self.untouched:
            bad = self.mismatches()
            lines += ["", f"exactness: {len(self.untouched) - len(bad)} of {len(self.untouched)} reruns of tasks a "
                          "policy never acted on repeated the baseline"
                      + (": " + "; ".join(f"{u.policy} on {u.task_id} ({u.detail})" for u in bad) if bad else "")]
        return "\n".join(lines)


# --------------------------------------------------------------------------- reading and running


def load_ablation(path: str | Path) -> dict[str, int]:
    """The ``{policy: cost}`` mapping of an ablation file: a report written by ``bench/bench_ablation.py``
    (its ``ablation`` key) or the mapping alone.

    Raises:
        UsageError: the file is missing, not JSON, or holds no such mapping.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{p}: cannot read the ablation file: {exc.strerror}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{p}: not a JSON ablation file") from exc
    mapping = data.get("ablation", data) if isinstance(data, dict) else None
    if not isinstance(mapping, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in mapping.items()):
        raise UsageError(f"{p}: expected {{policy: cost}} (integers), or a report with an 'ablation' key")
    return dict(mapping)


def _baseline(task: TaskSpec, episode: Episode, outcome: TaskOutcome) -> Baseline:
    return Baseline(task_id=task.id, group=task.group, success=outcome.success, stop_reason=outcome.stop_reason,
                    steps=outcome.steps, acted=acted(episode), trace=outcome.trace, actions=_actions(episode),
                    planner=episode.header.planner.model_dump(mode="json"))


def _records_interventions(path: Path) -> bool:
    """Whether every step line of the trace carries the field (a trace written before it reads as empty)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn last line: read_trace says so
        if isinstance(record, dict) and record.get("type") == "step" and "interventions" not in record.get("step", {}):
            return False
    return True


def baseline_from_traces(directory: str | Path, tasks: Sequence[TaskSpec], kit: HarnessKit, *,
                         partial: bool = False) -> dict[str, Baseline]:
    """The baseline of ``tasks`` from a ``pocketpilot bench --trace-dir DIR`` run (harness mode).

    Reads ``DIR/outcomes.jsonl`` and each outcome's trace, and refuses what would make the
    ablation inexact: a task missing (unless ``partial``: a resumed run makes the rest) or
    changed since it ran, a trace written before steps recorded their interventions, or a run
    under another policy set than ``kit``'s η names.

    Raises:
        UsageError: any of those, with the first task it concerns.
    """
    root = Path(directory)
    done = {k[0]: o for k, o in OutcomeLog(root).load().items() if k[1] == "harness"}
    if not done and not partial:
        raise UsageError(f"{root}: no harness outcomes (outcomes.jsonl of `pocketpilot bench --trace-dir`)")
    missing = [t.id for t in tasks if t.id not in done]
    if missing and not partial:
        raise UsageError(f"{root}: {len(missing)} selected task(s) never ran there, e.g. {missing[0]}; "
                         "select the tasks that bench ran")
    want = _set_of(kit)
    from ..tracing.trace import read_trace

    out: dict[str, Baseline] = {}
    for task in [t for t in tasks if t.id in done]:
        outcome = done[task.id]
        if outcome.task_digest and outcome.task_digest != task.digest():
            raise UsageError(f"{task.id} changed since it ran in {root}: run the baseline again")
        path = _trace_path(root, outcome)
        try:
            episode, _ = read_trace(path)
        except TraceError as exc:
            raise UsageError(str(exc)) from exc
        if not _records_interventions(path):
            raise UsageError(f"{path}: written before steps recorded their interventions: run the baseline again")
        if episode.header.policies != want:
            names = [p.get("name") for p in episode.header.policies]
            raise UsageError(f"{task.id} ran policies {names} with other parameters or order than η's "
                             f"{[p['name'] for p in want]}: run the baseline under this η")
        out[task.id] = _baseline(task, episode, outcome)
    return out


def _trace_path(root: Path, outcome: TaskOutcome) -> Path:
    """The outcome's trace: as recorded, else by its name under the folder (a moved or relative folder)."""
    if outcome.trace is None:
        raise UsageError(f"{outcome.task_id}: its outcome names no trace")
    given = Path(outcome.trace)
    if given.exists():
        return given
    local = root / "harness" / given.name
    if local.exists():
        return local
    raise UsageError(f"{outcome.task_id}: trace {given} not found (nor {local})")


def _untouched(policy: str, base: Baseline, episode: Episode, outcome: TaskOutcome) -> Untouched:
    again = _actions(episode)
    first = next((i for i, (a, b) in enumerate(zip(base.actions, again, strict=False)) if a != b), None)
    if first is None and len(again) != len(base.actions):
        first = min(len(again), len(base.actions))
    same = first is None and outcome.success == base.success
    detail = ("identical" if same else f"action {first} differs" if first is not None
              else f"verdict {base.success} -> {outcome.success}")
    return Untouched(policy=policy, task_id=base.task_id, identical=same, first_difference=first, detail=detail)


def _untouched_sample(tasks: Sequence[TaskSpec], base: Mapping[str, Baseline], policy: str, k: int,
                      *, turn: int) -> list[TaskSpec]:
    """Up to ``k`` tasks ``policy`` never acted on, for the exactness check: the longest runs first
    (more steps the policy was asked about), the ``turn``-th policy starting at the ``turn``-th
    longest, so the checks of several policies spread over the selection.
    """
    free = sorted((t for t in tasks if policy not in base[t.id].acted), key=lambda t: -base[t.id].steps)
    if not free or k <= 0:
        return []
    start = turn % len(free)
    return (free[start:] + free[:start])[:k]


ABLATION_LOG = "ablation.jsonl"
"""The reruns of an ablation with a trace folder, one JSON line each as it finishes (what ``resume`` reads)."""


def _journal(path: Path | None) -> tuple[dict[tuple[str, str], AblationRow], dict[tuple[str, str], Untouched]]:
    """The reruns an earlier run of the folder recorded, by (policy, task); the last of each wins."""
    rows: dict[tuple[str, str], AblationRow] = {}
    checks: dict[tuple[str, str], Untouched] = {}
    if path is None or not path.exists():
        return rows, checks
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
            if record.pop("type", None) == "row":
                row = AblationRow.model_validate(record)
                rows[(row.policy, row.task_id)] = row
            else:
                check = Untouched.model_validate(record)
                checks[(check.policy, check.task_id)] = check
        except (json.JSONDecodeError, ValueError, AttributeError):
            continue  # a line torn by a kill: that rerun runs again
    return rows, checks


def _record(path: Path | None, kind: str, item: BaseModel) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": kind, **item.model_dump(mode="json")}) + "\n")
        fh.flush()


async def run_ablation(
    tasks: Sequence[TaskSpec],
    planner_for: PlannerFor,
    *,
    kit: HarnessKit,
    policies: Sequence[str] = (),
    baseline: Mapping[str, Baseline] | None = None,
    verify_untouched: int = 0,
    embedder: Embedder | None = None,
    settings: RunSettings | None = None,
    trace_dir: Path | None = None,
    resume: bool = False,
    split: str | None = None,
    on_event: Callable[[str], None] | None = None,
) -> AblationReport:
    """The baseline (run here unless given), then each policy's tasks without it; the report.

    Args:
        tasks: The selection, in order.
        planner_for: The planner for a task, without a policy (None: the baseline).
        kit: The harness kit whose η's policy set is ablated.
        policies: The policies to ablate (empty: every ablatable one; see :func:`check_policies`).
        baseline: Runs with the whole set already made (:func:`baseline_from_traces`).
        verify_untouched: Tasks per policy, among those it never acted on (the longest runs first,
            each policy starting at another), run again without it and compared with the baseline (0: none).
        embedder: The memory stores' vectors (as the bench's harness mode).
        settings: The caller's settings over each task's own.
        trace_dir: Traces: the baseline under ``harness/`` with ``outcomes.jsonl`` (so the folder
            serves as ``baseline`` later), the reruns under ``without-<policy>/`` and their rows in
            ``ablation.jsonl``, each written as it finishes.
        resume: Keep the reruns ``trace_dir``'s ``ablation.jsonl`` holds (pass its baseline as
            ``baseline`` too: :func:`baseline_from_traces` with ``partial``).
        split: For the report.
        on_event: Told one line per run.

    Raises:
        UsageError: a bad policy name (see :func:`check_policies`), or no tasks.
    """
    if not tasks:
        raise UsageError("no tasks selected")
    chosen = check_policies(policies, kit)
    say = on_event or (lambda line: None)
    base: dict[str, Baseline] = dict(baseline or {})
    log = OutcomeLog(trace_dir) if trace_dir is not None else None
    journal = trace_dir / ABLATION_LOG if trace_dir is not None else None
    kept_rows, kept_checks = _journal(journal) if resume else ({}, {})
    for i, task in enumerate(tasks):
        if task.id in base:
            continue
        episode, outcome = await run_task(task, planner_for(task, None), mode="harness", kit=kit, embedder=embedder,
                                          settings=settings, trace_dir=trace_dir / "harness" if trace_dir else None)
        if log is not None:
            log.append(outcome)
        base[task.id] = _baseline(task, episode, outcome)
        say(f"[baseline {i + 1}/{len(tasks)}] {'PASS' if outcome.success else 'fail'} {task.id} "
            f"acted: {', '.join(sorted(base[task.id].acted)) or '-'}")
    rows: list[AblationRow] = []
    checks: list[Untouched] = []
    for policy in chosen:
        off = without_policy(kit, policy)
        sub = trace_dir / f"without-{policy}" if trace_dir is not None else None
        # a policy that shapes batches changes the decoding grammar of every step it asks groups
        # for, which no step records as an intervention: every task is rerun without it
        shapes = issubclass(registered()[policy], ShapesBatches)
        touched = [t for t in tasks if shapes or policy in base[t.id].acted]
        for task in touched:
            b = base[task.id]
            if (policy, task.id) in kept_rows:
                rows.append(kept_rows[(policy, task.id)])
                continue
            _, outcome = await run_task(task, planner_for(task, policy), mode="harness", kit=off, embedder=embedder,
                                        settings=settings, trace_dir=sub)
            rows.append(AblationRow(policy=policy, task_id=task.id, group=task.group, passed_with=b.success,
                                    passed_without=outcome.success, stop_with=b.stop_reason,
                                    stop_without=outcome.stop_reason, steps_with=b.steps, steps_without=outcome.steps,
                                    acted_steps=b.acted.get(policy, []), trace_without=outcome.trace))
            _record(journal, "row", rows[-1])
            say(f"[without {policy}] {task.id}: {'PASS' if b.success else 'fail'} -> "
                f"{'PASS' if outcome.success else 'fail'}")
        for task in [] if shapes else _untouched_sample(tasks, base, policy, verify_untouched,
                                                         turn=chosen.index(policy)):
            if (policy, task.id) in kept_checks:
                checks.append(kept_checks[(policy, task.id)])
                continue
            episode, outcome = await run_task(task, planner_for(task, policy), mode="harness", kit=off,
                                              embedder=embedder, settings=settings, trace_dir=sub)
            checks.append(_untouched(policy, base[task.id], episode, outcome))
            _record(journal, "untouched", checks[-1])
            say(f"[untouched without {policy}] {task.id}: {checks[-1].detail}")
    return AblationReport(split=split, policies=chosen, baseline=[base[t.id] for t in tasks], rows=rows,
                          untouched=checks)

