"""The vacuity audit: every bundled task fails when it is done wrong, and the audit catches tasks that don't."""

from __future__ import annotations

import pytest

from pocketpilot.contracts import Finish
from pocketpilot.tasks import load_suite
from pocketpilot.tasks.audit import audit_task, perturbed_oracles, vacuous_criteria
from pocketpilot.tasks.oracle import run_actions
from pocketpilot.tasks.run import prepare
from pocketpilot.tasks.spec import TaskSpec

SUITE = load_suite()


@pytest.mark.parametrize("task", SUITE, ids=[t.id for t in SUITE])
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
