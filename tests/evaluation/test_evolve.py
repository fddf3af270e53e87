"""``pocketpilot evolve``: the loop on a team's own world, its rule, its state, and the test split it never reads."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pocketpilot.adapters import load_eta
from pocketpilot.cli.main import cli
from pocketpilot.evaluation.evolve import MAX_GROUP_LOSS, MIN_GAIN, accepts, stratified_sample
from pocketpilot.evaluation.evolve_report import iteration_rows, markdown_table
from pocketpilot.evaluation.evolve_state import Decision, EvolveStateError, Paired

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import evolve_helpers as h  # noqa: E402


def _paired(before: dict[str, bool], after: dict[str, bool], groups: dict[str, str]) -> Paired:
    return Paired(label="c", groups=groups, before=before, after=after)


def test_the_acceptance_rule_counts_paired_tasks_and_group_losses() -> None:
    groups = {"a": "g1", "b": "g1", "c": "g2", "d": "g2", "e": "g3"}
    off = dict.fromkeys(groups, False)
    assert (MIN_GAIN, MAX_GROUP_LOSS) == (2, 1)
    two = _paired(off, off | {"a": True, "c": True}, groups)
    assert two.net == 2 and accepts(two)
    assert not accepts(_paired(off, off | {"a": True}, groups))  # one task is noise
    # +3 -1 in one group: net 2, a group loses one: accepted; two lost in one group: refused, whatever the net
    assert accepts(_paired(off | {"e": True}, off | {"a": True, "b": True, "c": True}, groups))
    lost_two = _paired(off | {"a": True, "b": True}, {"a": False, "b": False, "c": True, "d": True, "e": True}, groups)
    assert lost_two.net == 1 and lost_two.losses_by_group() == {"g1": 2} and not accepts(lost_two)
    many = _paired(off | {"a": True, "b": True}, {"a": False, "b": False, "c": True, "d": True, "e": True}
                   | {f"x{i}": True for i in range(3)}, groups | {f"x{i}": "g4" for i in range(3)})
    assert many.net >= 2 and not accepts(many)


def test_samples_are_stratified_and_the_same_for_a_key(team_tasks: Path) -> None:
    from pocketpilot.tasks.split_index import load_split_tasks

    dev = load_split_tasks(team_tasks, ["dev"])["dev"]
    a, b = stratified_sample(dev, 8, "1:1:dev"), stratified_sample(dev, 8, "1:1:dev")
    assert [t.id for t in a] == [t.id for t in b] and len(a) == 8
    assert {t.group for t in a} == {t.group for t in dev}  # every group is in a small sample
    assert [t.id for t in stratified_sample(dev, 8, "1:2:dev")] != [t.id for t in a]


def test_an_iteration_accepts_a_gain_writes_it_pending_and_waits_for_approval(team_tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    loop = h.make_loop(out, team_tasks, h.OraclePlanners(), auto_approve=False)
    first = load_eta(out / "eta.json")
    result = asyncio.run(loop.run(2))
    assert result.waiting_for and result.iterations_done == 0
    decision = Decision.model_validate_json((out / "iter-01" / "decision.json").read_text())
    assert decision.revision is not None and decision.revision.id == result.waiting_for
    assert accepts(next(iter(decision.measured.values())))
    assert "net +" in decision.revision.rationale and "decision.json" in decision.revision.rationale
    assert load_eta(out / "eta.json").version == first.version  # nothing applied before approval
    assert (out / "eta.json.revisions" / "pending" / f"{result.waiting_for}.json").exists()
    assert not (out / "iter-02").exists()
    assert "| pending |" in (out / "report.md").read_text()  # written as each iteration ends

    approved = CliRunner().invoke(cli, ["adapter", "approve", str(out / "eta.json"), result.waiting_for, "--by", "rev"])
    assert approved.exit_code == 0, approved.output
    planners = h.OraclePlanners()
    loop = h.make_loop(out, team_tasks, planners, auto_approve=False)
    again = asyncio.run(loop.run(2))
    assert again.waiting_for is None and again.iterations_done == 2
    assert all(c not in planners.calls for c in json.loads((out / "iter-01" / "start.json").read_text())["dev"]
               if c not in json.loads((out / "iter-02" / "start.json").read_text())["dev"])  # iteration 1 not rerun
    assert json.loads((out / "iter-02" / "start.json").read_text())["eta_version"] == load_eta(out / "eta.json").version
    assert load_eta(out / "eta.json").note(h.HELP_NOTE) is not None
    rows = iteration_rows(loop.state)
    assert [r.review.status for r in rows if r.review] == ["approved", "none"]
    table = markdown_table(rows)
    assert "\n| 1 |" in table and "\n| 2 |" in table and "evolve before" in table and "experience" in table


def test_a_candidate_that_breaks_a_group_is_not_accepted(team_tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    loop = h.make_loop(out, team_tasks, h.OraclePlanners(harmful=True), evolve=10)
    asyncio.run(loop.run(1))
    decision = Decision.model_validate_json((out / "iter-01" / "decision.json").read_text())
    assert decision.measured and decision.accepted == [] and decision.revision is None
    assert not list((out / "eta.json.revisions").glob("*/*.json"))
    # the candidate gained none of the tasks the current η fails, so its measurement stopped there:
    # the tasks η passes were never run under it (they could only lower its net)
    (paired,) = decision.measured.values()
    base_fails = {t for t, ok in paired.before.items() if not ok}
    assert set(paired.after) == base_fails and len(paired.after) < len(paired.before)


def test_a_killed_run_resumes_at_the_episode_it_stopped_at(team_tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    killed = subprocess.run([sys.executable, str(HERE / "evolve_helpers.py"), str(out), str(team_tasks), "4"],
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode != 0  # SIGKILL while asking for the 4th episode's planner
    lines = (out / "iter-01" / "dev" / "outcomes.jsonl").read_text().splitlines()
    assert len(lines) == 3
    resumed = h.OraclePlanners()
    asyncio.run(h.make_loop(out, team_tasks, resumed).run(1))
    fresh = h.OraclePlanners()
    asyncio.run(h.make_loop(tmp_path / "fresh", team_tasks, fresh).run(1))
    assert len(resumed.calls) == len(fresh.calls) - 3  # the three recorded episodes were not run again
    done = json.loads((out / "iter-01" / "decision.json").read_text())
    assert done == json.loads((tmp_path / "fresh" / "iter-01" / "decision.json").read_text())


def test_the_loop_never_opens_a_test_split_file(team_tasks: Path, tmp_path: Path) -> None:
    with h.files_opened() as seen:
        result = asyncio.run(h.make_loop(tmp_path / "out", team_tasks, h.OraclePlanners()).run(2))
    assert result.iterations_done == 2
    assert seen & h.split_files(team_tasks, "dev")  # the hook did see task files
    assert not seen & h.split_files(team_tasks, "test")


def _cli(*args: str) -> object:
    return CliRunner().invoke(cli, ["evolve", *args, "--no-embedder"])


def test_bad_input_is_one_line_and_exit_2(team_tasks: Path, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "tasks"
    shutil.copytree(team_tasks, folder)
    manifest = yaml.safe_load((folder / "MANIFEST.yml").read_text())
    for split, message in (("dev", "dev split is empty"), ("evolve", "no evolve split")):
        (folder / "MANIFEST.yml").write_text(yaml.safe_dump({**manifest, "splits": {**manifest["splits"], split: []}}))
        result = _cli("--tasks", str(folder), "--out", str(tmp_path / f"out-{split}"))
        assert result.exit_code == 2 and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
        assert not (tmp_path / f"out-{split}").exists()
    (folder / "MANIFEST.yml").write_text(yaml.safe_dump({k: v for k, v in manifest.items() if k != "splits"}))
    result = _cli("--tasks", str(folder), "--out", str(tmp_path / "out-x"))
    assert result.exit_code == 2 and "split index" in result.output


def test_a_corrupt_state_folder_is_refused_and_loses_nothing(team_tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    asyncio.run(h.make_loop(out, team_tasks, h.OraclePlanners()).run(1))
    approved = sorted((out / "eta.json.revisions" / "approved").iterdir())
    assert approved  # iteration 1 accepted and approved something
    keep = {p: p.read_bytes() for p in [out / "eta.json", *approved]}
    (out / "iter-01" / "decision.json").write_text("{not json")
    with pytest.raises(EvolveStateError, match="decision.json"):
        h.make_loop(out, team_tasks, h.OraclePlanners()).check()
    result = _cli("--tasks", str(team_tasks), "--out", str(out), "--iterations", "2", "--seed", "1",
                  "--dev-sample", "6", "--evolve-sample", "6")
    assert result.exit_code == 2 and "decision.json" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in keep} == keep
    (out / "evolve.json").write_text("[]")
    result = _cli("--tasks", str(team_tasks), "--out", str(out), "--seed", "1", "--dev-sample", "6",
                  "--evolve-sample", "6")
    assert result.exit_code == 2 and "evolve.json" in result.output
    assert {p: p.read_bytes() for p in keep} == keep


def test_the_command_runs_two_iterations_on_the_team_world(team_tasks: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import pocketpilot.cli.evolve as command

    planners = h.OraclePlanners()

    async def close() -> None:
        return None

    monkeypatch.setattr(command, "_planner_factory", lambda *a: (planners, close))
    out = tmp_path / "out"
    args = ["--tasks", str(team_tasks), "--out", str(out), "--iterations", "2", "--dev-sample", "8",
            "--evolve-sample", "6", "--auto-approve"]
    result = _cli(*args)
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    assert "\n| 1 |" in report and "\n| 2 |" in report and "Acceptance rule" in report
    assert "| 1 |" in result.output and "| 2 |" in result.output
    assert len(planners.calls) >= 8 + 6 + 8 + 6  # two iterations, dev and evolve each
    eta = load_eta(out / "iter-01" / "eta.json")
    assert {"set_heating", "book_stay"} <= set(eta.tools)  # η knows the team's tools, so it can learn about them
    proposals = json.loads((out / "iter-01" / "proposals.json").read_text())
    assert "experience" in {c["kind"] for c in proposals["candidates"]}  # distilled from the verified successes
    again = _cli(*args)  # finished: nothing runs again, the same table
    assert again.exit_code == 0 and (out / "report.md").read_text() == report
    changed = _cli(*[a if a != "8" else "9" for a in args])
    assert changed.exit_code == 2 and "other settings" in changed.output


@pytest.mark.model
@pytest.mark.slow
def test_one_iteration_with_the_small_model(team_tasks: Path, tmp_path: Path, test_gguf: Path) -> None:
    """The 0.5B model on 2 dev + 2 evolve tasks of the team's world: the loop's structure, not its figures."""
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["evolve", "--tasks", str(team_tasks), "--out", str(out), "--dev-sample", "2",
                                      "--evolve-sample", "2", "--no-embedder", "--model", str(test_gguf),
                                      "--auto-approve", "--no-pull", "--max-candidates", "1"])
    assert result.exit_code == 0, result.output
    assert len((out / "iter-01" / "dev" / "outcomes.jsonl").read_text().splitlines()) == 2
    assert len((out / "iter-01" / "evolve" / "base" / "outcomes.jsonl").read_text().splitlines()) == 2
    decision = Decision.model_validate_json((out / "iter-01" / "decision.json").read_text())
    assert len(decision.measured) <= 1 and all(len(p.after) == 2 for p in decision.measured.values())
    assert "| 1 |" in (out / "report.md").read_text()


def test_a_revision_the_reviewer_removes_is_rejected_and_the_loop_goes_on(team_tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = asyncio.run(h.make_loop(out, team_tasks, h.OraclePlanners(), auto_approve=False).run(2))
    assert first.waiting_for
    before = load_eta(out / "eta.json").version
    (out / "eta.json.revisions" / "pending" / f"{first.waiting_for}.json").unlink()  # the reviewer says no
    again = asyncio.run(h.make_loop(out, team_tasks, h.OraclePlanners(), auto_approve=False).run(2))
    rows = iteration_rows(h.make_loop(out, team_tasks, h.OraclePlanners()).state)
    assert rows[0].review is not None and rows[0].review.status == "rejected"
    assert json.loads((out / "iter-02" / "start.json").read_text())["eta_version"] == before
    assert again.iterations_done == 2 or again.waiting_for  # iteration 2 may propose the note again
