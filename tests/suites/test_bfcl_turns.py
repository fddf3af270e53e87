"""bench/bench_bfcl.py reports turn-level accuracy beside task accuracy, in its JSON and its printed summary."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from bench_scripts import bench_script

from pocketpilot.suites.bfcl import TurnCheck
from pocketpilot.suites.bfcl_run import BfclOutcome


@pytest.fixture(scope="module")
def bench():
    with bench_script("bench_bfcl", "bench_bfcl_turns") as module:
        yield module


def _outcome(task: str, mode: str, passed: list[bool], turns: int) -> BfclOutcome:
    checks = [TurnCheck(turn=i, checked=True, valid=ok) for i, ok in enumerate(passed)]
    return BfclOutcome(task_id=task, mode=mode, success=len(passed) == turns and all(passed), turns=turns,  # type: ignore[arg-type]
                       turns_run=len(passed), checks=checks)


def test_turn_accuracy_counts_unrun_turns_as_not_passed(bench) -> None:
    rows = [_outcome("a", "bare", [True, False], 4), _outcome("b", "bare", [True, True, True], 3)]
    s = bench.summary(rows)
    assert s["pass_rate"] == 0.5  # task level: b passed every turn
    assert (s["turns_passed"], s["turns"]) == (4, 7) and s["turns_passed_rate"] == pytest.approx(4 / 7)


def test_the_report_and_the_printout_give_both_levels_and_both_lifts(bench, capsys) -> None:
    done = {
        "bare": {"a": _outcome("a", "bare", [False], 4), "b": _outcome("b", "bare", [True, False], 2)},
        "harness": {"a": _outcome("a", "harness", [True, True, False], 4), "b": _outcome("b", "harness", [True, False], 2)},
    }
    suite = SimpleNamespace(wheel=SimpleNamespace(path=Path("bfcl_eval-x.whl")))
    tasks = [SimpleNamespace(id="a"), SimpleNamespace(id="b")]
    data = bench.report(suite, tasks, done, {"model": "m"}, None)
    assert data["runs"]["bare"]["summary"]["turns_passed_rate"] == pytest.approx(1 / 6)
    assert data["runs"]["harness"]["summary"]["turns_passed_rate"] == pytest.approx(3 / 6)
    assert data["lift_points"] == 0.0  # no task passes in either mode
    assert data["turn_lift_points"] == pytest.approx(100 * (3 / 6 - 1 / 6), abs=0.01)
    bench.print_summary(data)
    text = capsys.readouterr().out
    assert "0/2 = 0.0% tasks, 1/6 = 16.7% turns passed" in text
    assert "+0.0 points task level, +33.3 points turn level" in text
