"""The vacuity audit: a task proves something only if doing it wrong fails.

A task whose criteria already hold in its start state, that a do-nothing run passes, or that
every broken replay of its oracle still passes, measures nothing: an agent scores on it by
luck. The audit checks the three, without a model, so the bundled suite, a generated task or a
user's task folder can be vetted before anyone quotes a figure on it.

It runs only when asked (the suites' own tests, the task factory's validation, a caller of
:func:`audit_task`): loading a task folder or benching it never does, so a team's own folder
gets no warning from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..contracts import Finish
from .oracle import oracle_actions, run_actions
from .run import prepare
from .spec import (
    ActionCountCriterion,
    AnswerCriterion,
    CountCriterion,
    Criterion,
    NoCallCriterion,
    NoErrorCriterion,
    NoParentCallCriterion,
    OracleStep,
    StateCriterion,
    StopCriterion,
    TaskSpec,
    UnchangedCriterion,
)
from .verify import check_criterion
from .world import state_data

__all__ = ["TaskAudit", "audit_task", "perturbed_oracles", "vacuous_criteria"]


@dataclass
class TaskAudit:
    """What the audit found for one task (``ok`` when it measures something)."""

    task_id: str
    vacuous: list[str] = field(default_factory=list)
    """Positive criteria that hold at the start (before any call), unmarked ``already_true``."""
    oracle_passes: bool = False
    do_nothing_passes: bool = False
    perturbations: int = 0
    perturbations_failing: int = 0
    surviving: list[str] = field(default_factory=list)
    """The perturbations that still pass (expected for steps no criterion checks, such as a lookup)."""

    @property
    def ok(self) -> bool:
        """The task checks something: its oracle passes, doing nothing fails, and a perturbation is caught."""
        return (not self.vacuous and self.oracle_passes and not self.do_nothing_passes
                and (self.perturbations == 0 or self.perturbations_failing > 0))


def _is_guard(criterion: Criterion) -> bool:
    """A criterion that is not judged on the start alone.

    ``no_call``, ``no_error``, ``no_parent_call``, ``unchanged``, ``not_contains`` and a count
    (of calls or of any action) with only an upper bound guard against harm: true at the start
    by design. ``stop`` and ``answer`` are about how
    the episode ended, which the do-nothing run tests. Every other criterion claims something
    happened, so it must not hold before anything has.
    """
    if isinstance(criterion, (NoCallCriterion, NoErrorCriterion, UnchangedCriterion, StopCriterion,
                              AnswerCriterion, NoParentCallCriterion)):
        return True
    if isinstance(criterion, (CountCriterion, ActionCountCriterion)):
        return criterion.at_least is None
    return isinstance(criterion, StateCriterion) and criterion.test == "not_contains"


def vacuous_criteria(task: TaskSpec) -> list[str]:
    """Names of the positive criteria that hold in the start state with nothing done, unless marked so.

    State tests (``equals``, ``one_of``/``in``, ``contains``, ``between``, and ``either``,
    ``number_in_text`` and a team's ``check``) are judged on the start state; call, count,
    last-call, order and delegation criteria on an episode with no step, so
    a criterion written so loosely that nothing satisfies it is caught too.
    """
    run = prepare(task)
    try:
        start = run.initial
        dump = state_data(start)
        empty = _empty_episode(task)
        specs = run.specs()
        out = []
        for criterion in task.criteria:
            if _is_guard(criterion) or criterion.already_true:
                continue
            result = check_criterion(criterion, start, start, empty, final_dump=dump, tools=specs, roots=task.roots)
            if result.passed:
                out.append(result.name)
        return out
    finally:
        run.close()


def _empty_episode(task: TaskSpec) -> Any:
    from ..contracts import Episode, EpisodeHeader, PlannerInfo

    header = EpisodeHeader(episode_id="audit", request=task.goal, planner=PlannerInfo(backend="audit", model="none"))
    return Episode(header=header, steps=[], stop_reason="finish")


def _wrong(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + " (wrong)"
    return None


def perturbed_oracles(task: TaskSpec) -> list[tuple[str, list[OracleStep]]]:
    """Broken versions of the oracle: a step left out, two steps swapped, an argument changed, the
    wrong kind of stop, a summary without the answer, a call repeated at the end (a count bound
    exceeded, a change after what should have been the last one).
    """
    steps = list(task.oracle)
    body = steps[:-1]  # the final step (finish, ask_user, refuse) stays
    out: list[tuple[str, list[OracleStep]]] = []
    for i in range(len(body)):
        out.append((f"without step {i}", [*body[:i], *body[i + 1:], steps[-1]]))
    for i in range(len(body) - 1):
        swapped = list(body)
        swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
        out.append((f"steps {i} and {i + 1} swapped", [*swapped, steps[-1]]))
    final = steps[-1]
    if final.finish is not None:  # finishing without the answer, or asking instead
        out.append(("a final summary that says nothing", [*body, OracleStep(finish="Done.")]))
        out.append(("asking instead of finishing", [*body, OracleStep(ask_user="What do you mean?")]))
    else:  # guessing instead of asking or refusing
        out.append(("finishing instead of stopping", [*body, OracleStep(finish=final.ask_user or final.refuse or "Done.")]))
    first_call = next((i for i, step in enumerate(body) if step.call is not None or step.batch), None)
    if first_call is not None:
        out.append((f"step {first_call} repeated at the end", [*body, body[first_call], steps[-1]]))
    for i, step in enumerate(body):
        for key, value in step.args.items():
            wrong = _wrong(value)
            if wrong is not None:
                changed = step.model_copy(update={"args": {**step.args, key: wrong}})
                out.append((f"step {i} with a wrong {key}", [*body[:i], changed, *body[i + 1:], steps[-1]]))
                break
    return out


async def _passes(task: TaskSpec, oracle: list[OracleStep] | None, *, do_nothing: bool = False) -> bool:
    run = prepare(task)
    try:
        if do_nothing:
            actions: list[Any] = [Finish(summary="Done.")]
        else:
            actions = oracle_actions(task.model_copy(update={"oracle": oracle}))
        episode = await run_actions(run, actions)
        return (await run.verifier(episode)).success
    finally:
        run.close()


async def audit_task(task: TaskSpec) -> TaskAudit:
    """Audit one task: vacuous criteria, the oracle, a do-nothing run and the perturbed oracles."""
    report = TaskAudit(task_id=task.id, vacuous=vacuous_criteria(task))
    if task.oracle:
        report.oracle_passes = await _passes(task, task.oracle)
    report.do_nothing_passes = await _passes(task, None, do_nothing=True)
    for label, steps in perturbed_oracles(task) if task.oracle else []:
        report.perturbations += 1
        if await _passes(task, steps):
            report.surviving.append(label)
        else:
            report.perturbations_failing += 1
    return report
