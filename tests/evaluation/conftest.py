"""Fixtures of the evaluation tests: a task folder generated from a team's own tool module."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pocketpilot.cli.main import cli

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def team_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tasks made by `pocketpilot tasks generate` from the team's kennel module of ``evolve_helpers``
    (written outside the project), with dev, evolve and test splits; the folder carries the module.
    """
    sys.path.insert(0, str(HERE))
    import evolve_helpers as h

    root = tmp_path_factory.mktemp("team")
    module_dir = root / "module"
    h.write_tool_module(module_dir)
    out = root / "tasks"
    sys.path.insert(0, str(module_dir))
    try:
        result = CliRunner().invoke(cli, ["tasks", "generate", "--world", "kennel_app:WORLD", "-n", "100",
                                          "--seed", "3", "--prefix", "team-", "-o", str(out)])
    finally:
        sys.path.remove(str(module_dir))
        sys.modules.pop("kennel_app", None)
    assert result.exit_code == 0, result.output
    (out / "kennel_app.py").write_text((module_dir / "kennel_app.py").read_text())  # the folder handed over
    index = yaml.safe_load((out / "MANIFEST.yml").read_text())["splits"]
    assert index["dev"] and index["evolve"] and index["test"]
    return out
