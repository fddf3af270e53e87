"""The calibration report (bench/bench_calibration.py) reads a partial log as it is: only tasks of
the sample that ran in both modes, as they are now, each counted under the template it came from."""

from __future__ import annotations

from argparse import Namespace

import pytest
from bench_scripts import bench_script

from pocketpilot.evaluation.bench_runs import OutcomeLog
from pocketpilot.evaluation.compare import TaskOutcome
from pocketpilot.tasks.template import load_templates


@pytest.fixture(scope="module")
def calibration():
    with bench_script("bench_calibration") as module:
        yield module


def _outcome(task, mode: str, success: bool, wall: float, digest: str | None = None) -> TaskOutcome:
    return TaskOutcome(task_id=task.id, capability=task.capability, group=task.group, domain=task.domains[0],
                       mode=mode, success=success, progress=1.0 if success else 0.0,
                       stop_reason="finish" if success else "refuse", steps=2, prompt_tokens_evaluated=10,
                       completion_tokens=5, wall_s=wall, task_digest=digest if digest is not None else task.digest())


def test_template_of_takes_the_longest_template_id_that_names_the_task(calibration) -> None:
    ids = ["cond", "cond-true", "handoff-id", "handoff-read"]
    assert calibration.template_of("gen-cond-true-0004", ids) == "cond-true"
    assert calibration.template_of("gen-cond-0004", ids) == "cond"
    assert calibration.template_of("gen-handoff-id-0012", ids) == "handoff-id"
    assert calibration.template_of("wifi-off", ids) == "bundled"


def test_the_report_counts_paired_current_outcomes_per_template(calibration, tmp_path) -> None:
    tasks = calibration.sample(2)
    assert len(tasks) == 8 and {t.group for t in tasks} == {"tool_use", "memory", "skills", "subagent"}
    log = OutcomeLog(tmp_path)
    for i, task in enumerate(tasks[:6]):
        log.append(_outcome(task, "bare", success=i % 2 == 0, wall=10.0 + i))
        # the harness outcome of task 5 is of the task as it was: it does not count
        log.append(_outcome(task, "harness", success=True, wall=20.0 + i, digest="stale" if i == 5 else None))
    log.append(_outcome(tasks[6], "bare", success=True, wall=1.0))  # one mode only: not paired
    out = tmp_path / "report.md"
    assert calibration.report(Namespace(per_group=2, log=str(log.path), markdown=str(out))) == 0
    text = out.read_text()
    assert text.startswith("# Calibration: 5 of 8 sampled test tasks ran in both modes")
    templates = {t.id: t for t in load_templates().templates}
    rows = [line.split(" | ") for line in text.splitlines()
            if line.startswith("| ") and line.split(" | ")[0][2:] in templates]
    assert sum(int(r[2]) for r in rows) == 5
    for r in rows:
        assert r[1] == templates[r[0][2:]].difficulty
    assert "| bare | refuse 2, finish 3 |" in text or "| bare | finish 3, refuse 2 |" in text
    assert "| harness | finish 5 |" in text
    assert "1.83x" in text  # medians of the paired tasks 0-4: harness 22 s, bare 12 s


def test_an_empty_log_is_reported_as_such(calibration, tmp_path) -> None:
    assert calibration.report(Namespace(per_group=2, log=str(tmp_path / "outcomes.jsonl"), markdown=None)) == 1
