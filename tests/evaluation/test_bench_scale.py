"""The bench at suite size: shards partition the tasks, a resumed run skips what finished, ray is optional."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pocketpilot.errors import BackendUnavailableError, UsageError
from pocketpilot.evaluation.bench_runs import OutcomeLog, parse_shard, shard_of, shard_tasks, still_valid
from pocketpilot.evaluation.compare import HarnessKit, run_comparison
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite
from pocketpilot.tasks.suite import load_generated_suite

FINISH = {"kind": "finish", "summary": "done"}


@pytest.fixture(scope="module")
def every_task():
    """The generated and the bundled suite, loaded once (about two seconds)."""
    return load_generated_suite() + load_suite()


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_shards_cover_every_task_exactly_once(count, every_task) -> None:
    tasks = every_task
    shards = [shard_tasks(tasks, i, count) for i in range(count)]
    ids = [t.id for shard in shards for t in shard]
    assert sorted(ids) == sorted(t.id for t in tasks) and len(ids) == len(set(ids))
    if count > 1:
        assert all(len(s) > len(tasks) / count / 2 for s in shards)  # roughly even
    # membership depends on the id only: order and the rest of the selection do not matter
    assert [t.id for t in shard_tasks(list(reversed(tasks)), 0, count)] == [t.id for t in reversed(shards[0])]
    assert all(shard_of(t.id, count) == 0 for t in shard_tasks(tasks[:50], 0, count))


@pytest.mark.parametrize("bad", ["1", "a/b", "3/3", "-1/2", "0/0"])
def test_a_bad_shard_is_a_usage_error(bad) -> None:
    with pytest.raises(UsageError):
        parse_shard(bad)


async def test_resume_skips_what_finished_and_reports_it_unchanged(tmp_path) -> None:
    tasks = load_suite("dev")[:4]
    kit = HarnessKit()
    log = OutcomeLog(tmp_path)
    first = await run_comparison(tasks[:2], ScriptedPlanner([FINISH] * 2), modes=("bare",), kit=kit,
                                 on_task=lambda i, o: log.append(o))
    with log.path.open("a") as fh:
        fh.write('{"task_id": "torn')  # a run killed mid-write
    done = log.load()
    assert set(done) == {(t.id, "bare") for t in tasks[:2]}
    ran: list[str] = []
    planner = ScriptedPlanner([FINISH] * 2)  # enough for the two tasks left, no more
    report = await run_comparison(tasks, planner, modes=("bare",), kit=kit, done=done,
                                  on_task=lambda i, o: ran.append(o.task_id))
    assert ran == [t.id for t in tasks[2:]]
    outcomes = report.runs["bare"].outcomes
    assert [o.task_id for o in outcomes] == [t.id for t in tasks]
    assert outcomes[:2] == first.runs["bare"].outcomes
    per_task = report.to_json()["runs"]["bare"]["wall_s"]["per_task"]
    assert set(per_task) == {t.id for t in tasks}


async def test_resume_runs_again_a_task_changed_since_it_ran(tmp_path) -> None:
    tasks = load_suite("dev")[:3]
    log = OutcomeLog(tmp_path)
    await run_comparison(tasks, ScriptedPlanner([FINISH] * 3), modes=("bare",), kit=HarnessKit(),
                         on_task=lambda i, o: log.append(o))
    done = log.load()
    assert all(o.task_digest == t.digest() for t, o in zip(tasks, (done[(t.id, "bare")] for t in tasks), strict=True))
    # the suite regenerated: the second task keeps its id, its goal is another
    edited = [tasks[0], tasks[1].model_copy(update={"goal": tasks[1].goal + " Today."}), tasks[2]]
    assert edited[1].digest() != tasks[1].digest()
    # a line from a log older than the digest: nothing says the task differs, so it is kept
    old = done[(tasks[2].id, "bare")].model_copy(update={"task_digest": ""})
    kept = still_valid({**done, (tasks[2].id, "bare"): old}, edited, ("bare",))
    assert set(kept) == {(tasks[0].id, "bare"), (tasks[2].id, "bare")}
    assert still_valid(done, edited, ("harness",)) == {}  # another mode's outcomes are not this run's
    ran: list[str] = []
    await run_comparison(edited, ScriptedPlanner([FINISH]), modes=("bare",), kit=HarnessKit(), done=kept,
                         on_task=lambda i, o: ran.append(o.task_id))
    assert ran == [tasks[1].id]


def _bench(*args: str):
    from pocketpilot.cli.main import cli

    return CliRunner().invoke(cli, ["bench", *args])


def test_bench_cli_refuses_resume_without_a_folder_and_a_bad_shard() -> None:
    result = _bench("--resume", "--no-pull")
    assert result.exit_code == 2 and "--resume needs --trace-dir" in result.output
    result = _bench("--shard", "4/4", "--no-pull")
    assert result.exit_code == 2 and "0 <= i < n" in result.output


def test_bench_ray_backend_without_ray_is_a_typed_error(monkeypatch) -> None:
    from pocketpilot.trainer_bridge.rollouts import ray_pool

    monkeypatch.setattr(ray_pool, "ray_available", lambda: False)
    result = _bench("--backend", "ray", "--limit", "1", "--no-pull")
    assert result.exit_code == 2 and "ray backend is not available" in result.output
    from pocketpilot.evaluation.bench_runs import run_ray_outcomes

    with pytest.raises(BackendUnavailableError):
        run_ray_outcomes(load_suite("dev")[:1], factory=None)


def test_bench_ray_backend_refuses_the_bare_mode(monkeypatch) -> None:
    from pocketpilot.trainer_bridge.rollouts import ray_pool

    monkeypatch.setattr(ray_pool, "ray_available", lambda: True)
    result = _bench("--backend", "ray", "--compare", "--limit", "1", "--no-pull")
    assert result.exit_code == 2 and "harness configuration only" in result.output


@pytest.mark.slow
def test_bench_ray_backend_runs_the_rollout_pool(tmp_path) -> None:
    pytest.importorskip("ray")
    from pocketpilot.evaluation.bench_runs import run_ray_outcomes
    from pocketpilot.trainer_bridge.rollouts import ScriptedPlannerFactory

    tasks = load_generated_suite("dev")[:3]
    outcomes = run_ray_outcomes(tasks, ScriptedPlannerFactory(), workers=1, trace_dir=tmp_path)
    assert [o.task_id for o in outcomes] == [t.id for t in tasks]
    assert all(o.success for o in outcomes)  # oracle replays on the generated tasks
    assert json.loads(outcomes[0].model_dump_json())["wall_s"] > 0
