"""Loading or benching a user's task folder runs no vacuity audit and prints no audit warning.

The audit (:mod:`pocketpilot.tasks.audit`) vets the bundled and generated suites and what the
task factory writes; a team's own folder is theirs to judge. Even a folder whose criterion holds
at the start (what the audit would flag) loads and benches without a word about it.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import pocketpilot.cli.bench as bench_module
import pocketpilot.tasks.audit as audit_module
import pocketpilot.tasks.validate as validate_module
from pocketpilot.cli.main import cli
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite

WORLD_DIR = Path(__file__).resolve().parents[1] / "tasks" / "outside_world"


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the vacuity audit ran on a user's folder")


def test_a_foreign_folder_loads_and_benches_without_an_audit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "team"
    shutil.copytree(WORLD_DIR, folder)
    vacuous = {"id": "gh-already-on", "goal": "Make sure the greenhouse is on.", "capability": "single_tool",
               "split": "dev", "world": {"apps": ["greenhouse.app:GreenhouseApp"],
                                         "state_model": "greenhouse.state:GreenhouseState"},
               "criteria": [{"kind": "state", "path": "powered", "equals": True}]}  # true at the start
    (folder / "already-on.yaml").write_text(yaml.safe_dump(vacuous))
    for name in ("audit_task", "vacuous_criteria", "perturbed_oracles"):
        monkeypatch.setattr(audit_module, name, _never)
    monkeypatch.setattr(validate_module, "validate_task", _never)
    monkeypatch.setattr(validate_module, "_vacuous", _never)
    caplog.set_level(logging.INFO, logger="pocketpilot")
    tasks = load_suite(directory=folder)
    assert "gh-already-on" in {t.id for t in tasks}
    monkeypatch.setattr(bench_module, "build_planner",
                        lambda *a, **k: ScriptedPlanner([{"kind": "finish", "summary": "Done."}] * len(tasks)))
    out = CliRunner().invoke(cli, ["bench", "--tasks", str(folder), "--no-embedder"])
    assert out.exit_code == 0, out.output
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == [], [r.getMessage() for r in warned]
    text = (out.output + caplog.text).lower()
    assert "vacu" not in text and "audit" not in text
