"""`run --task FILE` over a team's task files: a world that overrides sandbox tools, and a task
judged by the team's own Python check; and a bad check reference refused in one line, exit 2,
before a planner loads (issue 34 items 5 and 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import pocketpilot.cli.run as run_module
from pocketpilot.cli.main import cli, main
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_task, oracle_actions

TASKS = Path(__file__).resolve().parents[1] / "tasks"


def _no_planner(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a planner was built for a task that should have been refused first")


@pytest.mark.parametrize(("task_file", "shown"), [
    (TASKS / "beside_world" / "cast-with-override.yaml", "[x] state world.cast.target == \"kitchen\""),
    (TASKS / "team_checks" / "parked.yaml", "[x] check parking_checks:parked"),
])
def test_run_a_team_task_file(task_file: Path, shown: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planner = ScriptedPlanner(oracle_actions(load_task(task_file)))
    monkeypatch.setattr(run_module, "build_planner", lambda *a, **k: planner)
    monkeypatch.setattr(run_module, "default_embedder", lambda: None)
    out = CliRunner().invoke(cli, ["run", "--task", str(task_file), "--yes", "--trace-dir", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "verdict: SUCCESS" in out.output and shown in out.output, out.output
    assert planner.remaining == 0


def test_a_bad_check_reference_is_refused_before_a_planner_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    data = yaml.safe_load((TASKS / "team_checks" / "parked.yaml").read_text())
    data["criteria"][0]["ref"] = "parking_checks:nope"
    task_file = tmp_path / "parked.yaml"
    task_file.write_text(yaml.safe_dump(data))
    (tmp_path / "parking_checks.py").write_text((TASKS / "team_checks" / "parking_checks.py").read_text())
    monkeypatch.setattr(run_module, "build_planner", _no_planner)
    with pytest.raises(SystemExit) as exc:
        main(["run", "--task", str(task_file), "--trace-dir", str(tmp_path / "traces")])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert "criteria[0]: check 'parking_checks:nope': module 'parking_checks' has no attribute 'nope'" in err
    assert len(err.strip().splitlines()) == 1, err
