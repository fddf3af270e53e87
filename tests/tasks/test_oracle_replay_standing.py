"""Standing check: 0 golden paths blocked. Every oracle, replayed by a scripted planner through
the harness (and bare), passes; and the check itself catches a path the harness blocks.

The bundled hand-written suite is replayed whole in the fast tier: bare here, harness in
``tests/harness/test_task_runs.py`` (the same run, the same pass rule, one test per task). The
generated suite is replayed as a stratified sample there (every fortieth task of each group and
split, so every cell, plus the oracles that were once blocked) and whole under ``slow`` (about
1,150 tasks, both modes: a minute or two).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pocketpilot.cli.main import cli
from pocketpilot.evaluation.oracle_replay import BlockedOracle, replay_oracles
from pocketpilot.evaluation.task_episode import load_harness_kit
from pocketpilot.tasks import load_suite
from pocketpilot.tasks.suite import load_generated_suite

BOTH = ("harness", "bare")
APN_TASK = Path(__file__).resolve().parents[2] / "pocketpilot" / "tasks" / "data" / "recovery-data-reset-apn.yaml"
ONCE_BLOCKED = {
    "gen-mem-reconcile-0055",  # a repeated read: the loop guard forced a finish before the remembered change
}


@pytest.fixture(scope="module")
def kit():
    return load_harness_kit()


def _stratified(tasks, every: int = 40):
    cells = defaultdict(list)
    for task in sorted(tasks, key=lambda t: t.id):
        cells[(task.group, task.split)].append(task)
    picked = [t for cell in cells.values() for t in cell[::every]]
    return picked + [t for t in tasks if t.id in ONCE_BLOCKED and t not in picked]


async def test_every_bundled_oracle_passes_bare(kit) -> None:
    blocked = await replay_oracles(load_suite(), modes=("bare",), kit=kit)
    assert blocked == [], "\n".join(b.line() for b in blocked)


async def test_a_stratified_sample_of_generated_oracles_passes(kit) -> None:
    suite = load_generated_suite()
    sample = _stratified(suite)
    assert {(t.group, t.split) for t in sample} == {(t.group, t.split) for t in suite}
    assert {t.group for t in sample} == {"tool_use", "memory", "skills", "subagent"}
    assert ONCE_BLOCKED <= {t.id for t in sample}
    blocked = await replay_oracles(sample, modes=BOTH, kit=kit)
    assert blocked == [], "\n".join(b.line() for b in blocked)


@pytest.mark.slow
async def test_every_generated_oracle_passes_through_the_harness_and_bare(kit) -> None:
    blocked = await replay_oracles(load_generated_suite(), modes=BOTH, kit=kit)
    assert blocked == [], "\n".join(b.line() for b in blocked)


def _blocked_folder(tmp_path: Path) -> Path:
    """The APN task with its read taken out of the oracle (and the criterion that asks for the
    read): bare mode still passes it, the harness holds the unread reset."""
    spec = yaml.safe_load(APN_TASK.read_text())
    spec["id"] = "apn-reset-unread"
    spec["oracle"] = [s for s in spec["oracle"] if s.get("call") != "get_apn_settings"]
    spec["criteria"] = [c for c in spec["criteria"] if c["kind"] != "order"]
    folder = tmp_path / "blocked"
    folder.mkdir()
    (folder / "apn-reset-unread.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder


async def test_the_check_reports_a_golden_path_the_harness_blocks(tmp_path, kit) -> None:
    tasks = load_suite(directory=_blocked_folder(tmp_path))
    blocked = await replay_oracles(tasks, modes=BOTH, kit=kit)
    assert [(b.task_id, b.mode) for b in blocked] == [("apn-reset-unread", "harness")]  # bare passes
    (b,) = blocked
    assert isinstance(b, BlockedOracle) and 'state apn.name == "internet"' in b.failed_criteria
    assert any("reset_apn_settings: not_allowed" in f for f in b.failures)
    assert "reset_apn_settings: not_allowed" in b.line()


async def test_a_task_whose_policy_prescribes_the_fix_needs_no_read(tmp_path, kit) -> None:
    """The same unread reset passes once the task's operating policy prescribes it."""
    folder = _blocked_folder(tmp_path)
    path = folder / "apn-reset-unread.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["guidance"] = ["When pages do not load over mobile data, reset the APN settings and check again."]
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    assert await replay_oracles(load_suite(directory=folder), modes=BOTH, kit=kit) == []


def test_the_cli_exits_non_zero_on_a_blocked_golden_path(tmp_path) -> None:
    out = CliRunner().invoke(cli, ["tasks", "check-oracles", str(_blocked_folder(tmp_path)), "--mode", "both"])
    assert out.exit_code == 1, out.output
    assert "apn-reset-unread [harness]" in out.output and "1 oracle(s) replayed (harness, bare): 1 blocked" in out.output
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / APN_TASK.name).write_text(APN_TASK.read_text())
    out = CliRunner().invoke(cli, ["tasks", "check-oracles", str(clean)])
    assert out.exit_code == 0, out.output
    assert "1 oracle(s) replayed (harness): 0 blocked" in out.output
