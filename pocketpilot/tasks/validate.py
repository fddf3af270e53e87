"""Vet a generated task on its world before it is written: the same four checks as the vacuity audit.

A generated task is kept only if its oracle passes, a do-nothing run fails, at least one broken
oracle (a step left out, two swapped, an argument changed, the wrong stop) fails, and no
positive criterion holds at the start. These run on any :class:`~.gen_world.GenWorld` (the sandbox or
a user's), with the task verifier's own criterion checks and the audit's own perturbations;
the world's loader check comes last (the sandbox parses the file as the loader would).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from ..contracts import Finish
from .audit import _empty_episode, perturbed_oracles
from .gen_world import GenWorld, WorldRun
from .oracle import oracle_actions, run_actions
from .spec import OracleStep, StateCriterion, TaskSpec
from .verify import check_criterion

__all__ = ["CHECKS", "Check", "validate_task"]

Check = Literal["spec", "vacuous", "oracle_fails", "do_nothing_passes", "no_perturbation_fails", "loader"]
CHECKS: tuple[Check, ...] = ("spec", "vacuous", "oracle_fails", "do_nothing_passes", "no_perturbation_fails", "loader")
"""Validation checks in the order they run; a dropped task is counted under the first it fails."""


@dataclass
class _Run:
    task: TaskSpec
    executor: WorldRun


def exposed(world: GenWorld, tools: list[str] | str) -> list[str]:
    """Tool names a task exposes on ``world`` (app names stand for their tools)."""
    names = [t.name for t in world.tools()]
    if tools == "all":
        return names
    wanted = set(tools)
    return [n for n in names if n in wanted or world.app_of(n) in wanted]


async def _passes(world: GenWorld, task: TaskSpec, patch: dict[str, Any], steps: list[OracleStep] | None, *,
                  do_nothing: bool = False) -> bool:
    run = world.start(patch, exposed(world, task.tools))
    initial = run.dump()
    actions: list[Any] = [Finish(summary="Done.")] if do_nothing else oracle_actions(
        task.model_copy(update={"oracle": steps}))
    episode = await run_actions(_Run(task, run), actions)  # type: ignore[arg-type]
    final = run.dump()
    specs = {t.name: t for t in world.tools()}
    return all(
        check_criterion(c, initial, final, episode, final_dump=final, tools=specs).passed for c in task.criteria
    )


def _vacuous(world: GenWorld, task: TaskSpec, patch: dict[str, Any]) -> bool:
    start = world.start(patch).dump()
    episode = _empty_episode(task)
    for c in task.criteria:
        if not isinstance(c, StateCriterion) or c.test == "not_contains" or c.already_true:
            continue
        if check_criterion(c, start, start, episode, final_dump=start).passed:
            return True
    return False


async def validate_task(world: GenWorld, data: dict[str, Any]) -> Check | None:
    """The first check ``data`` (a task-file dict) fails on ``world``, or None when it passes all."""
    try:
        task = TaskSpec.model_validate(data)
    except ValidationError:
        return "spec"
    patch = world.patch_of(data)
    if not task.oracle:
        return "oracle_fails"
    if _vacuous(world, task, patch):
        return "vacuous"
    if not await _passes(world, task, patch, list(task.oracle)):
        return "oracle_fails"
    if await _passes(world, task, patch, None, do_nothing=True):
        return "do_nothing_passes"
    for _, steps in perturbed_oracles(task):
        if not await _passes(world, task, patch, steps):
            break
    else:
        return "no_perturbation_fails"
    if world.check(data) is not None:
        return "loader"
    return None
