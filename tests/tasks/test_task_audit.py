"""The vacuity audit: every bundled task fails when it is done wrong, and the audit catches tasks that don't."""

from __future__ import annotations

from typing import Any

import pytest

from pocketpilot.contracts import Finish
from pocketpilot.executor.sandbox import default_state
from pocketpilot.tasks import load_suite
from pocketpilot.tasks.audit import audit_task, perturbed_oracles, vacuous_criteria
from pocketpilot.tasks.oracle import run_actions
from pocketpilot.tasks.run import prepare
from pocketpilot.tasks.spec import TaskSpec

SUITE = load_suite()
FAST = {next(t.id for t in SUITE if (t.capability, t.group) == cell)
        for cell in dict.fromkeys((t.capability, t.group) for t in SUITE)} | {t.id for t in SUITE if t.world}
"""One task of each capability and group (and the task on a world of its own) in the fast tier;
every task under ``slow``: the audit is a property of the suite's data, which a code change rarely moves."""


@pytest.mark.parametrize("task", [pytest.param(t, id=t.id, marks=() if t.id in FAST else pytest.mark.slow)
                                  for t in SUITE])
async def test_every_bundled_task_measures_something(task: TaskSpec) -> None:
    report = await audit_task(task)
    assert report.vacuous == [], "mark a criterion meant to hold at the start `already_true: true`"
    assert report.oracle_passes and not report.do_nothing_passes
    assert report.perturbations_failing > 0, f"every broken oracle still passes: {report.surviving}"


def _task(**update) -> TaskSpec:
    base = next(t for t in SUITE if t.id == "settings-wifi-off")
    return TaskSpec.model_validate(base.model_dump(exclude_unset=True) | update)


async def test_a_criterion_true_at_the_start_is_flagged_unless_marked() -> None:
    start = prepare(_task()).initial.settings.bluetooth
    criterion = {"kind": "state", "path": "settings.bluetooth", "equals": start}
    flagged = _task(criteria=[*_task().model_dump(exclude_unset=True)["criteria"], criterion])
    assert vacuous_criteria(flagged) == [f"state settings.bluetooth == {str(start).lower()}"]
    marked = _task(criteria=[*_task().model_dump(exclude_unset=True)["criteria"], criterion | {"already_true": True}])
    assert vacuous_criteria(marked) == []


async def test_a_task_that_doing_nothing_passes_is_not_ok() -> None:
    lazy = _task(criteria=[{"kind": "stop", "reason": "finish"}])
    report = await audit_task(lazy)
    assert report.do_nothing_passes and not report.ok


async def test_a_task_no_broken_oracle_fails_is_not_ok() -> None:
    # only "it stopped somehow": leaving out, swapping or changing anything still passes
    loose = _task(criteria=[{"kind": "stop", "reason": ["finish", "ask_user"]},
                            {"kind": "call", "tool": "set_wifi", "ok": None}])
    report = await audit_task(loose)
    assert report.perturbations > 0
    assert report.surviving and len(report.surviving) < report.perturbations + 1


def test_perturbations_cover_a_missing_step_an_order_a_wrong_argument_and_the_stop() -> None:
    task = next(t for t in SUITE if t.id == "ordering-parking-note-then-off")
    labels = [label for label, _ in perturbed_oracles(task)]
    assert "without step 0" in labels and "steps 0 and 1 swapped" in labels
    assert any(label.startswith("step 0 with a wrong") for label in labels)
    assert "a final summary that says nothing" in labels and "asking instead of finishing" in labels


async def test_a_seeded_note_that_matches_does_not_count_as_created() -> None:
    """The demo's "a note with 42" check: the sandbox's seeded notes must not satisfy it."""
    task = next(t for t in SUITE if t.id == "ordering-parking-note-then-off")
    run = prepare(task)
    assert any("42" in note.body for note in run.initial.notes.items)  # the seeded wifi note, "sunflower42"
    episode = await run_actions(run, [Finish(summary="Done.")])
    verdict = await run.verifier(episode)
    assert not verdict.criteria[0].passed
    uncreated = task.criteria[0].model_copy(update={"created": False})
    loose = task.model_copy(update={"criteria": [uncreated, *task.criteria[1:]]})
    assert vacuous_criteria(loose)  # what the check proved before: nothing


def _wifi_task(*criteria: dict[str, Any]) -> TaskSpec:
    return TaskSpec.model_validate({
        "id": "audit-kinds", "goal": "Turn the wifi off.", "capability": "single_tool", "split": "dev",
        "tools": ["settings", "power"], "criteria": list(criteria),
        "oracle": [{"call": "set_wifi", "args": {"enabled": False}}, {"finish": "off"}]})


def test_the_audit_flags_a_range_true_at_the_start_but_not_guards() -> None:
    start = default_state().settings.brightness
    loose = {"kind": "state", "path": "settings.brightness", "between": [start - 1, start + 1]}
    assert vacuous_criteria(_wifi_task(loose)) == [f"state settings.brightness between {start - 1} and {start + 1}"]
    assert vacuous_criteria(_wifi_task(loose | {"already_true": True})) == []
    guards = [{"kind": "count", "tool": "set_wifi", "at_most": 1}, {"kind": "no_error", "code": "device_off"},
              {"kind": "no_call", "tool": "power_off"}]
    assert vacuous_criteria(_wifi_task(*guards)) == []
    positive = [{"kind": "count", "tool": "set_wifi", "at_least": 1}, {"kind": "last_call", "tool": "set_wifi"}]
    assert vacuous_criteria(_wifi_task(*positive)) == []


async def test_a_repeated_call_breaks_an_at_most_bound_in_the_audit() -> None:
    report = await audit_task(_wifi_task({"kind": "count", "tool": "set_wifi", "at_least": 1, "at_most": 1}))
    assert "step 0 repeated at the end" not in report.surviving and report.ok
    loose = await audit_task(_wifi_task({"kind": "count", "tool": "set_wifi", "at_least": 1}))
    assert "step 0 repeated at the end" in loose.surviving


async def test_a_task_on_its_own_world_is_audited_like_a_sandbox_task() -> None:
    from pathlib import Path

    world_tasks = load_suite(directory=Path(__file__).parent / "outside_world")
    for task in world_tasks:
        report = await audit_task(task)
        assert report.ok and not report.do_nothing_passes, report
    shutdown = next(t for t in world_tasks if t.id == "gh-cool-then-shutdown")
    before_the_end = shutdown.model_copy(update={"criteria": [c for c in shutdown.criteria if c.kind == "last_call"]})
    # only "shutdown is the last change": leaving out set_temperature still passes, swapping them does not
    report = await audit_task(before_the_end)
    assert "without step 0" in report.surviving and "steps 0 and 1 swapped" not in report.surviving
