"""Rollout collection: G rollouts per task on fresh phones, in process and on a local Ray cluster."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketpilot.cli.rollout import rollout
from pocketpilot.errors import UsageError
from pocketpilot.tasks import load_suite
from pocketpilot.trainer_bridge.rollouts import (
    ScriptedPlannerFactory,
    collect_local,
    collect_rollouts,
    ray_available,
    write_groups,
)

TASKS = load_suite("dev")[:3]


def test_local_groups_have_g_rollouts_with_verified_outcomes(tmp_path: Path) -> None:
    factory = ScriptedPlannerFactory(failure_rate=0.5, seed=3)
    report = asyncio.run(collect_local(TASKS, 4, factory, workers=2, trace_dir=tmp_path / "traces"))
    assert len(report.results) == 12 and len(list((tmp_path / "traces").glob("*.jsonl"))) == 12
    assert {g.task_id for g in report.groups} == {t.id for t in TASKS}
    for group in report.groups:
        mine = [r for r in report.results if r.task_id == group.task_id]
        assert group.size == 4 and sorted(r.index for r in mine) == [0, 1, 2, 3]
        assert group.success_rate == sum(r.outcome.success for r in mine) / 4
        assert [r.success for r in group.rollouts] == [r.outcome.success for r in sorted(mine, key=lambda r: r.index)]
    rates = [g.success_rate for g in report.groups]
    assert any(0 < r < 1 for r in rates) or len(set(rates)) > 1  # cut-short episodes really fail
    assert {r.worker for r in report.results} == {"local-0", "local-1"}
    out = write_groups(report.groups, tmp_path / "groups.jsonl")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["task_id"] for row in rows] == [g.task_id for g in report.groups]
    assert all({"success", "progress", "output_tokens", "tool_calls"} <= set(row["rollouts"][0]) for row in rows)


def test_bad_arguments_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="group-size"):
        collect_rollouts(TASKS, 0, ScriptedPlannerFactory())
    with pytest.raises(UsageError, match="no tasks"):
        collect_rollouts([], 2, ScriptedPlannerFactory())
    r = CliRunner().invoke(rollout, ["--tasks", "no-such-task", "--planner", "scripted", "--out", str(tmp_path / "out")])
    assert isinstance(r.exception, UsageError)


def test_cli_writes_traces_and_groups(tmp_path: Path) -> None:
    r = CliRunner().invoke(rollout, ["--tasks", ",".join(t.id for t in TASKS[:2]), "--group-size", "2",
                                     "--planner", "scripted", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert summary["episodes"] == 4 and [g["size"] for g in summary["groups"]] == [2, 2]
    assert len((tmp_path / "groups.jsonl").read_text().splitlines()) == 2
    assert len(list((tmp_path / "traces").glob("*.jsonl"))) == 4


@pytest.mark.slow
@pytest.mark.skipif(not ray_available(), reason="ray is not installed (optional extra `ray`)")
def test_ray_actors_match_the_local_run(tmp_path: Path) -> None:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        factory = ScriptedPlannerFactory(failure_rate=0.5, seed=3)
        remote = collect_rollouts(TASKS, 4, factory, workers=2, trace_dir=tmp_path / "traces", use_ray=True)
    finally:
        ray.shutdown()
    local = asyncio.run(collect_local(TASKS, 4, factory))
    assert remote.backend == "ray" and {r.worker for r in remote.results} == {"ray-0", "ray-1"}
    assert [(g.task_id, [x.success for x in g.rollouts]) for g in remote.groups] == [
        (g.task_id, [x.success for x in g.rollouts]) for g in local.groups
    ]
    traces = sorted((tmp_path / "traces").glob("*.jsonl"))
    assert len(traces) == 12 and all(r.trace and r.trace.is_file() for r in remote.results)


def test_ray_flag_without_ray_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from pocketpilot.trainer_bridge.rollouts import ray_pool

    monkeypatch.setattr(ray_pool, "ray_available", lambda: False)
    with pytest.raises(UsageError, match=r"pocketpilot\[ray\]"):
        collect_rollouts(TASKS, 2, ScriptedPlannerFactory(), use_ray=True)
