"""`run --task FILE` and `bench --tasks DIR` over a task folder from outside the package, and every
bad world refused in one line, exit 2, before a planner loads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import pocketpilot.cli.bench as bench_module
import pocketpilot.cli.run as run_module
from pocketpilot.cli.main import cli, main
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, load_task, oracle_actions

WORLD_DIR = Path(__file__).resolve().parents[1] / "tasks" / "outside_world"


def _no_planner(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a planner was built for a task that should have been refused first")


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    return int(exc.value.code or 0), capsys.readouterr().err


def test_both_commands_take_threads() -> None:
    for command in ("run", "bench"):
        out = CliRunner().invoke(cli, [command, "--help"])
        assert out.exit_code == 0 and "--threads" in out.output, command


def test_run_task_file_from_a_folder_outside_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task_file = WORLD_DIR / "shutdown-last.yaml"
    planner = ScriptedPlanner(oracle_actions(load_task(task_file)))
    monkeypatch.setattr(run_module, "build_planner", lambda *a, **k: planner)
    monkeypatch.setattr(run_module, "default_embedder", lambda: None)
    out = CliRunner().invoke(cli, ["run", "--task", str(task_file), "--yes", "--trace-dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "task gh-cool-then-shutdown" in out.output and "shutdown()" in out.output
    assert "verdict: SUCCESS" in out.output and "[x] last state-changing call is shutdown" in out.output
    assert len(list(tmp_path.glob("*.jsonl"))) == 1 and planner.remaining == 0


def test_run_task_file_reports_a_failed_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --yes and without a terminal, shutdown is denied: the world tells, the verdict fails."""
    task_file = WORLD_DIR / "shutdown-last.yaml"
    monkeypatch.setattr(run_module, "build_planner", lambda *a, **k: ScriptedPlanner(oracle_actions(load_task(task_file))))
    monkeypatch.setattr(run_module, "default_embedder", lambda: None)
    out = CliRunner().invoke(cli, ["run", "--task", str(task_file), "--trace-dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "verdict: FAILURE" in out.output and "[ ] state powered == false" in out.output


def test_bench_over_a_task_folder_with_a_scripted_planner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = load_suite(directory=WORLD_DIR)
    actions = [a for t in tasks for a in oracle_actions(t)]  # one planner serves the suite, task after task
    monkeypatch.setattr(bench_module, "build_planner", lambda *a, **k: ScriptedPlanner(actions))
    report = tmp_path / "bench.json"
    out = CliRunner().invoke(cli, ["bench", "--tasks", str(WORLD_DIR), "--no-embedder", "--out", str(report),
                                   "--threads", "1"])
    assert out.exit_code == 0, out.output
    data = json.loads(report.read_text())
    outcomes = data["runs"]["harness"]["outcomes"]
    assert [o["task_id"] for o in outcomes] == [t.id for t in tasks]
    assert all(o["success"] for o in outcomes), [(o["task_id"], o["failed_criteria"]) for o in outcomes]


def test_bench_over_a_task_folder_fails_what_a_planner_did_not_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = load_suite("dev", directory=WORLD_DIR)
    finish = {"kind": "finish", "summary": "Done."}
    monkeypatch.setattr(bench_module, "build_planner", lambda *a, **k: ScriptedPlanner([finish] * len(tasks)))
    report = tmp_path / "bench.json"
    out = CliRunner().invoke(cli, ["bench", "--tasks", str(WORLD_DIR), "--split", "dev", "--no-embedder",
                                   "--out", str(report)])
    assert out.exit_code == 0, out.output
    outcomes = json.loads(report.read_text())["runs"]["harness"]["outcomes"]
    assert len(outcomes) == len(tasks) == 2 and not any(o["success"] for o in outcomes)


# ---------------------------------------------------------------- bad input: one line, exit 2


def _bad_folder(tmp_path: Path, case: str) -> tuple[Path, str]:
    """A user's task folder with one broken task; returns it and what the message must name."""
    folder = tmp_path / case
    folder.mkdir()
    shutil.copytree(WORLD_DIR / "greenhouse", folder / "greenhouse")
    world: dict[str, Any] = {"apps": ["greenhouse.app:GreenhouseApp"], "state_model": "greenhouse.state:GreenhouseState"}
    criteria: list[dict[str, Any]] = [{"kind": "state", "path": "powered", "equals": False}]
    if case == "module":
        world["apps"] = [f"missing_{os.getpid()}_pkg.app:App"]
        culprit = f"cannot import 'missing_{os.getpid()}_pkg.app'"
    elif case == "state":
        world["initial_state"] = {"temperature": "tropical"}
        culprit = "world.initial_state does not fit GreenhouseState: temperature"
    elif case == "path":
        criteria = [{"kind": "state", "path": "greenhouse.powered", "equals": False}]
        culprit = "bad path 'greenhouse.powered'"
    else:
        module = f"bad_id_arg_{case.replace('-', '_')}"
        (folder / f"{module}.py").write_text(
            "from pocketpilot.executor.tools import tool\n\n"
            "@tool(effect='update', id_arg='plant', name_arg='label')\n"
            "def rename_plant(plant_id: str, name: str) -> None:\n    '''Rename a plant.'''\n"
        )
        world["apps"] = [*world["apps"], f"{module}:rename_plant"]
        culprit = "id_arg 'plant' is not a parameter of rename_plant"
    data = {"id": "broken-world", "goal": "Shut the greenhouse down.", "capability": "single_tool", "split": "dev",
            "world": world, "criteria": criteria}
    (folder / "task.yaml").write_text(yaml.safe_dump(data))
    return folder, culprit


CASES = ["module", "state", "path", "id_arg"]


@pytest.mark.parametrize("case", CASES)
def test_run_refuses_a_bad_world_before_any_planner(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    folder, culprit = _bad_folder(tmp_path, case)
    monkeypatch.setattr(run_module, "build_planner", _no_planner)
    code, err = run_main(["run", "--task", str(folder / "task.yaml")], capsys)
    assert code == 2, err
    assert err.startswith("error: invalid task ") and culprit in err and str(folder / "task.yaml") in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("case", CASES)
def test_bench_refuses_a_bad_world_before_any_planner(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    folder, culprit = _bad_folder(tmp_path, f"{case}-bench")
    monkeypatch.setattr(bench_module, "build_planner", _no_planner)
    code, err = run_main(["bench", "--tasks", str(folder), "--no-embedder"], capsys)
    assert code == 2, err
    assert err.startswith("error: invalid task ") and culprit in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_user_running_a_bad_world_gets_one_line(tmp_path: Path) -> None:
    folder, culprit = _bad_folder(tmp_path, "module")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-m", "pocketpilot", "run", "--task", str(folder / "task.yaml"),
                          "--model", str(tmp_path / "never-loaded.gguf")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2, out.stderr
    assert culprit in out.stderr and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
