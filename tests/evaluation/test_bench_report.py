"""The bench's saved output: JSON schema, Markdown table, and the CLI that writes them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketpilot.cli import bench as bench_cli
from pocketpilot.errors import UsageError
from pocketpilot.evaluation.compare import BENCH_SCHEMA, BenchReport, HarnessKit, run_comparison
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions

SUITE = {t.id: t for t in load_suite()}
FINISH = {"kind": "finish", "summary": "done"}
METRICS = {"tasks", "success_rate", "mean_progress", "mean_steps", "mean_output_tokens", "mean_wall_s", "gate_violations"}


async def _comparison() -> BenchReport:
    # harness: the oracle of each task (passes); bare: finish straight away (fails an action task)
    tasks = [SUITE["settings-wifi-off"], SUITE["mem-recall-reading-brightness"]]
    script: list = []
    for task in tasks:
        script.append(FINISH)  # bare first, interleaved per task
        script.extend(oracle_actions(task))
    planner = ScriptedPlanner(script)
    return await run_comparison(tasks, planner, split="mixed", kit=HarnessKit())


async def test_comparison_json_schema_and_lift() -> None:
    report = await _comparison()
    data = json.loads(json.dumps(report.to_json(), allow_nan=False))  # strict JSON: no NaN
    assert data["schema"] == BENCH_SCHEMA
    assert set(data) == {"schema", "planner", "split", "task_ids", "kit", "runs", "lift_points"}
    assert data["task_ids"] == ["settings-wifi-off", "mem-recall-reading-brightness"]
    assert set(data["runs"]) == {"bare", "harness"}
    for mode, run in data["runs"].items():
        assert set(run) == {"by_group", "by_capability", "by_domain", "outcomes", "wall_s"}
        assert set(run["wall_s"]["per_task"]) == set(data["task_ids"])  # wall time per task, at a glance
        assert set(run["by_group"]) == {"tool_use", "memory", "ALL"}
        # the calibration's per-domain figures: one row per first-named app, and ALL
        assert set(run["by_domain"]) == {o["domain"] for o in run["outcomes"]} | {"ALL"}
        for row in run["by_group"].values():
            assert set(row) == METRICS
        assert all(o["mode"] == mode for o in run["outcomes"])
        fields = {"task_id", "group", "success", "steps", "completion_tokens", "wall_s", "gate_violations"}
        assert fields <= set(run["outcomes"][0])
    assert data["runs"]["harness"]["by_group"]["ALL"]["success_rate"] == 1.0
    assert data["runs"]["bare"]["by_group"]["ALL"]["success_rate"] == 0.0
    assert data["lift_points"] == {"tool_use": 100.0, "memory": 100.0, "ALL": 100.0}
    assert data["runs"]["bare"]["by_group"]["ALL"]["gate_violations"] is None  # empty kit: nothing declared
    assert data["kit"]["skills"] is None


async def test_markdown_table_has_a_row_per_group_and_the_lift() -> None:
    table = (await _comparison()).markdown()
    lines = table.splitlines()
    assert lines[0].startswith("| group | tasks | bare success |") and lines[0].endswith("lift (pts) |")
    assert any(line.startswith("| memory | 1 | 0.0% |") for line in lines)
    # then success per domain (the tasks name their apps), with its own lift column
    at = lines.index(next(line for line in lines if line.startswith("| domain |")))
    assert lines[at] == "| domain | tasks | bare success | harness success | lift (pts) |"
    assert any(line.startswith("| ALL | 2 | 0.0% | 100.0% | +100.0 |") for line in lines[at:])
    assert lines[[i for i, line in enumerate(lines) if line.startswith("| ALL")][0]].endswith("+100.0 |")
    assert "gate violations reaching the executor: bare n/a, harness n/a" in table


def test_one_mode_report_has_no_lift() -> None:
    report = BenchReport(planner={}, split=None, task_ids=[], kit={}, runs={})
    assert report.lift() == {}


def test_cli_compare_writes_json_and_markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task_ids = ["clarify-text-him", "settings-wifi-off"]  # suite order (dev tasks)
    monkeypatch.setattr(bench_cli, "build_planner", lambda *a, **k: ScriptedPlanner([FINISH] * 4))
    out, md = tmp_path / "bench.json", tmp_path / "bench.md"
    args = ["--compare", "--no-embedder", "--out", str(out), "--markdown", str(md)]
    for t in task_ids:
        args += ["--task-id", t]
    result = CliRunner().invoke(bench_cli.bench, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["task_ids"] == task_ids and set(data["runs"]) == {"bare", "harness"}
    assert "[bare 1/2]" in result.output and "[harness 2/2]" in result.output
    assert md.read_text().startswith("| group |")
    assert not math.isnan(data["runs"]["harness"]["by_group"]["ALL"]["success_rate"])


def test_cli_refuses_contradictory_flags_and_empty_selections() -> None:
    runner = CliRunner()
    result = runner.invoke(bench_cli.bench, ["--compare", "--no-harness"])
    assert isinstance(result.exception, UsageError)
    with pytest.raises(UsageError):
        bench_cli.select_tasks("test", ("no-such-task",), (), None)


def test_stratified_subset_takes_evenly_spaced_tasks_of_every_group() -> None:
    tasks = bench_cli.select_tasks("test", (), (), None, per_group=2)
    groups = [t.group for t in tasks]
    assert sorted(set(groups)) == ["memory", "skills", "subagent", "tool_use"]
    assert all(groups.count(g) == 2 for g in set(groups))
    assert {t.split for t in tasks} == {"test"}


@pytest.mark.parametrize("command", ["bench", "run", "demo"])
def test_threads_must_be_positive(command: str) -> None:
    from click.testing import CliRunner

    from pocketpilot.cli.main import cli

    out = CliRunner().invoke(cli, [command, "--threads", "0", "--no-pull", "--model", "/nonexistent.gguf"])
    assert out.exit_code == 2 and "--threads" in out.output


def test_threads_reach_the_in_process_planner(monkeypatch: pytest.MonkeyPatch, test_gguf) -> None:
    import click

    from pocketpilot.cli._planner import build_planner, planner_options

    built = {}

    @click.command()
    @planner_options
    def probe(model, endpoint, temperature, max_new_tokens, pull):  # noqa: ANN001, ANN202
        built["planner"] = build_planner(model, endpoint, temperature, max_new_tokens, pull)

    from click.testing import CliRunner

    out = CliRunner().invoke(probe, ["--model", str(test_gguf), "--threads", "1", "--no-pull"])
    assert out.exit_code == 0, out.output
    assert built["planner"]._kwargs["n_threads"] == 1


def test_bench_runs_a_folder_of_tasks_from_outside_the_package(tmp_path) -> None:
    """An app team's own task folder: selected like the bundled suite; a bad file is one line, exit 2."""
    import shutil

    from click.testing import CliRunner

    from pocketpilot.cli.main import cli
    from pocketpilot.tasks.split_lock import DATA

    src = DATA / "settings-wifi-off.yaml"
    folder = tmp_path / "ours"
    folder.mkdir()
    shutil.copy(src, folder / "ours-wifi.yaml")
    (folder / "ours-wifi.yaml").write_text((folder / "ours-wifi.yaml").read_text().replace(
        "id: settings-wifi-off", "id: ours-wifi-off"))
    tasks = bench_cli.select_tasks(None, (), (), None, directory=str(folder))
    assert [t.id for t in tasks] == ["ours-wifi-off"]
    (folder / "broken.yaml").write_text("id: broken\ngoal: x\n")
    out = CliRunner().invoke(cli, ["bench", "--tasks", str(folder), "--no-pull", "--model", "/nonexistent.gguf"])
    assert out.exit_code == 2 and "broken" in out.output and "Traceback" not in out.output
