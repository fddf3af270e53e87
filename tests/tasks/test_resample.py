"""Resampling the task mix: unstable tasks up, mastered tasks down, new tasks where failures cluster."""

from __future__ import annotations

import hashlib
import json

import pytest
from click.testing import CliRunner

from pocketpilot.tasks import load_suite
from pocketpilot.tasks.resample import RULE, resample


def _outcome(task_id: str, mode: str, success: bool, progress: float = 0.0, capability: str = "multi_step") -> dict:
    return {"task_id": task_id, "mode": mode, "success": success, "progress": progress, "capability": capability,
            "group": "tool_use", "steps": 2, "wall_s": 1.0}


def _report(tmp_path, outcomes):
    runs: dict = {}
    for o in outcomes:
        runs.setdefault(o["mode"], {"outcomes": []})["outcomes"].append(o)
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"schema": "pocketpilot.bench/1", "runs": runs}))
    return path


def test_weights_move_the_right_way(tmp_path) -> None:
    report = _report(tmp_path, [
        _outcome("unstable", "bare", False), _outcome("unstable", "harness", True),
        _outcome("mastered", "bare", True), _outcome("mastered", "harness", True),
        _outcome("failing", "bare", False), _outcome("failing", "harness", False),
        _outcome("close", "bare", False, 0.5), _outcome("close", "harness", False, 0.5),
    ])
    mix = resample(report)
    w = mix.weights
    assert w["unstable"] > w["close"] > w["failing"] > w["mastered"]
    assert w["mastered"] < 1 < w["unstable"]
    assert mix.status == {"unstable": "unstable", "mastered": "mastered", "failing": "failing", "close": "failing"}
    assert mix.rule == RULE and mix.inputs == {str(report): hashlib.sha256(report.read_bytes()).hexdigest()}


@pytest.mark.slow  # generates tasks: about 15 s
def test_new_tasks_come_from_the_failure_categories_templates(tmp_path) -> None:
    report = _report(tmp_path, [_outcome("a", "harness", False, capability="recall"),
                                _outcome("b", "harness", True, capability="single_tool")])
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"task_id": "a", "category": "decomposition", "failed": True}) + "\n")
    new = tmp_path / "new"
    mix = resample(report, labels=labels, new_count=6, new_dir=new, seed=1)
    assert mix.categories == {"decomposition": 1}
    # decomposition → multi-step and ordering templates; the failing task's capability → recall ones
    assert {"multi-two", "multi-three", "ordering-two", "mem-recall"} <= set(mix.templates)
    assert "setting-bool" not in mix.templates  # a mastered capability gets nothing new
    assert len(mix.generated) >= 4 and all(mix.weights[t] == 2.0 for t in mix.generated)
    assert {t.id for t in load_suite(directory=new)} == set(mix.generated)
    assert str(labels) in mix.inputs


def test_the_cli_writes_the_mix(tmp_path) -> None:
    from pocketpilot.cli.main import cli

    report = _report(tmp_path, [_outcome("x", "bare", False), _outcome("x", "harness", True)])
    out = tmp_path / "mix.json"
    result = CliRunner().invoke(cli, ["tasks", "resample", str(report), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["weights"] == {"x": 3.0}
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = CliRunner().invoke(cli, ["tasks", "resample", str(bad), "-o", str(out)])
    assert result.exit_code == 2 and "not a bench report" in result.output


async def test_export_takes_the_mix_as_sampling_weights(tmp_path) -> None:
    from pocketpilot.cli.main import cli
    from pocketpilot.evaluation.compare import HarnessKit, run_task
    from pocketpilot.harness.planners import ScriptedPlanner
    from pocketpilot.tasks import oracle_actions
    from pocketpilot.tasks.resample import TaskMix

    first, second = [t for t in load_suite("dev") if t.oracle and not t.memory][:2]
    for task in (first, second):
        await run_task(task, ScriptedPlanner(oracle_actions(task)), trace_dir=tmp_path / "traces", kit=HarnessKit())
    mix = tmp_path / "mix.json"
    mix.write_text(TaskMix(weights={first.id: 3.0, second.id: 0.0}).model_dump_json())
    out = tmp_path / "rl.jsonl"
    traces = [str(p) for p in (tmp_path / "traces").glob("*.jsonl")]
    result = CliRunner().invoke(cli, ["export", "rl", *traces, "-o", str(out), "--min-size", "1", "--no-memory-db",
                                      "--mix", str(mix)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["task_id"], r["sample_weight"]) for r in rows] == [(first.id, 3.0)]  # weight 0: left out
