"""report.md says what the decode memo saved, per iteration and run set, counted from the traces on disk."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketpilot.adapters import save_eta
from pocketpilot.cli.main import cli
from pocketpilot.contracts import Episode, EpisodeHeader, PlannerInfo, PlannerTurn, Step
from pocketpilot.evaluation.evolve import MEMO_FILE
from pocketpilot.evaluation.evolve_report import render_report
from pocketpilot.evaluation.evolve_state import EVOLVE_SCHEMA, IterationStart
from pocketpilot.tracing.trace import TraceWriter, read_trace

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import evolve_helpers as h  # noqa: E402
from test_evolve_memo import Factory, _loop  # noqa: E402

HEADER = EpisodeHeader(episode_id="e-1", request="r", planner=PlannerInfo(backend="scripted", model="scripted"))
TORN = '{"type": "step", "step": {"planner"'


def _step(index: int, memo: bool | None, children: list[Episode] | None = None) -> Step:
    """A step whose planner turn was served from the memo or decoded (None: a step without a planner turn)."""
    turn = None if memo is None else PlannerTurn(raw="{}", latency_s=0.1, memo=memo)
    return Step(index=index, context_digest="d", planner=turn, children=children or [])


def _trace(path: Path, memo: list[bool], child: list[bool] = ()) -> None:
    """A trace file, written by the trace writer: a step per entry of ``memo`` (its planner turn served
    or not); the first step delegates to a sub-agent whose steps are ``child``; a step without a
    planner turn; the end record; then a torn last line, as a run killed mid-write leaves it.
    """
    sub = Episode(header=HEADER.model_copy(update={"episode_id": "e-sub"}),
                  steps=[_step(j, m) for j, m in enumerate(child)])
    steps = [_step(i, m, [sub] if i == 0 and child else None) for i, m in enumerate(memo)]
    steps.append(_step(len(memo), None))

    async def write() -> None:
        writer = TraceWriter(path)
        try:
            await writer.header(HEADER)
            for step in steps:
                await writer.step(step)
            await writer.end(Episode(header=HEADER, steps=steps, stop_reason="finish"))
        finally:
            writer.close()

    asyncio.run(write())
    with path.open("a", encoding="utf-8") as fh:
        fh.write(TORN)


def _outcomes(folder: Path, root: Path, runs: dict[str, tuple[list[bool], list[bool]] | None]) -> None:
    """A run set: per task, its trace's turns (None: an outcome whose trace file is gone)."""
    lines = []
    for task, turns in runs.items():
        trace = folder / "traces" / f"{task}.jsonl"
        if turns is not None:
            _trace(trace, *turns)
        lines.append(json.dumps({"task_id": task, "capability": "c", "group": "g", "success": False, "progress": 0,
                                 "stop_reason": "finish", "steps": 1, "prompt_tokens_evaluated": 0,
                                 "completion_tokens": 0, "wall_s": 1.0, "trace": str(trace.relative_to(root))}))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "outcomes.jsonl").write_text("\n".join(lines) + "\n")


def _folder(root: Path, *, memo_file: bool) -> Path:
    """A folder as an older version left it: one iteration, its run sets and traces, no memo figures in report.md."""
    root.mkdir()
    (root / "evolve.json").write_text(json.dumps({"schema": EVOLVE_SCHEMA, "settings": {
        "tasks_dir": "/nowhere", "dev_sample": 2, "evolve_sample": 2}}))
    eta = h.base_eta()
    save_eta(eta, root / "eta.json")
    d = root / "iter-01"
    save_eta(eta, d / "eta.json")
    (d / "start.json").write_text(IterationStart(iteration=1, eta_version=eta.version, dev=["a", "b"],
                                                 evolve=["c", "d"]).model_dump_json())
    _outcomes(d / "dev", root, {"a": ([False, False, False], []), "b": ([False, False], [False])})
    # the baseline: 2 of 5 served (one of them a sub-agent's turn)
    _outcomes(d / "evolve" / "base", root, {"c": ([True, False], [True, False]), "d": ([False], [])})
    _outcomes(d / "evolve" / "no-experience", root, {"c": ([True, True, False], [])})
    # a candidate: 4 of 5 served, and one episode whose trace is gone
    _outcomes(d / "evolve" / "help-1", root, {"c": ([True, True, True, False], [True]), "d": None})
    if memo_file:
        (root / MEMO_FILE).write_text("")
    (root / "report.md").write_text("an older report\n")
    return root


def _memo_rows(report: str) -> dict[str, list[str]]:
    """The memo table's rows, by run set."""
    section = report.split("## Decode memo", 1)[1]
    return {cells[1]: cells[2:] for line in section.splitlines()
            if line.startswith("| ") and (cells := [c.strip() for c in line.strip("|").split("|")])[0] != "iter"}


def test_the_report_counts_served_and_decoded_steps_of_each_run_set_from_the_traces(tmp_path: Path) -> None:
    out = _folder(tmp_path / "out", memo_file=True)
    report = render_report(out)
    assert (out / "report.md").read_text() == report + "\n"
    rows = _memo_rows(report)
    # episodes, planner steps, served, decoded, served share
    assert rows["dev"] == ["2", "6", "0", "6", "0%"]
    assert rows["evolve base"] == ["2", "5", "2", "3", "40%"]
    assert rows["no experience (harm rerun)"] == ["1", "3", "2", "1", "67%"]
    assert rows["candidate help-1"] == ["2 (1 without a trace)", "5", "4", "1", "80%"]
    assert rows["**iteration**"] == ["7 (1 without a trace)", "19", "8", "11", "42%"]
    assert rows["**total**"] == rows["**iteration**"]
    assert list(rows)[:4] == ["dev", "evolve base", "no experience (harm rerun)", "candidate help-1"]
    assert "Decode memo: on" in report and "| 1 |" in report.split("## Decode memo")[0]


def test_a_folder_without_the_memo_file_says_the_memo_was_off(tmp_path: Path) -> None:
    report = render_report(_folder(tmp_path / "out", memo_file=False))
    assert "Decode memo: off" in report and "Decode memo: on" not in report


def test_report_only_rewrites_report_md_and_nothing_else(tmp_path: Path) -> None:
    out = _folder(tmp_path / "out", memo_file=True)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    result = CliRunner().invoke(cli, ["evolve", "--out", str(out), "--report-only"])  # no --tasks, no model
    assert result.exit_code == 0, result.output
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    report = out / "report.md"
    assert set(after) == set(before)  # no lock file, no memo, no state file written
    assert {p: v for p, v in after.items() if p != report} == {p: v for p, v in before.items() if p != report}
    assert "| 1 | candidate help-1 | 2 (1 without a trace) | 5 | 4 | 1 | 80% |" in report.read_text()
    assert "candidate help-1" in result.output


@pytest.mark.parametrize("damage", ["{not json", '{"type": "step", "step": {"index": "first"}}'],
                         ids=["invalid JSON", "a step that does not validate"])
def test_a_trace_damaged_before_its_last_line_counts_as_without_a_trace(tmp_path: Path, damage: str) -> None:
    """The trace reader refuses a trace with a malformed line before the last (only a torn last line is
    a killed run's): the episode is counted as without a trace, its other steps not at all, and
    --report-only still writes the report."""
    out = _folder(tmp_path / "out", memo_file=True)
    trace = out / "iter-01" / "evolve" / "base" / "traces" / "c.jsonl"
    read_trace(trace)  # whole but for its torn last line, as every synthetic trace
    lines = trace.read_text().split("\n")
    trace.write_text("\n".join([lines[0], damage, *lines[2:]]))
    result = CliRunner().invoke(cli, ["evolve", "--out", str(out), "--report-only"])
    assert result.exit_code == 0, result.output
    report = (out / "report.md").read_text()
    assert "one the trace reader refuses" in report  # the note says what "without a trace" covers
    rows = _memo_rows(report)
    assert rows["evolve base"] == ["2 (1 without a trace)", "1", "0", "1", "0%"]  # d's one decoded step alone
    assert rows["dev"] == ["2", "6", "0", "6", "0%"]  # the other run sets as before
    assert rows["**iteration**"] == ["7 (2 without a trace)", "15", "6", "9", "40%"]


def test_report_only_on_a_folder_that_is_not_an_evolve_folder_exits_2(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    result = CliRunner().invoke(cli, ["evolve", "--out", str(tmp_path / "x"), "--report-only"])
    assert result.exit_code == 2 and "not an evolve output folder" in result.output
    assert list((tmp_path / "x").iterdir()) == []
    missing = CliRunner().invoke(cli, ["evolve", "--out", str(tmp_path / "y")])  # a run still needs --tasks
    assert missing.exit_code == 2 and "Missing option '--tasks'" in missing.output
    assert not (tmp_path / "y").exists()


def _row_counts(report: str, label: str) -> tuple[int, int]:
    cells = _memo_rows(report)[label]
    return int(cells[2]), int(cells[3])


def test_a_loop_s_report_counts_what_its_memo_served(team_tasks: Path, tmp_path: Path) -> None:
    on, off = Factory(), Factory()
    loop = _loop(tmp_path / "on", team_tasks, on)
    asyncio.run(loop.run(1))
    asyncio.run(_loop(tmp_path / "off", team_tasks, off, decode_memo=False).run(1))
    report = (tmp_path / "on" / "report.md").read_text()
    served, decoded = _row_counts(report, "**total**")
    assert served == loop.memo.stats.hits > 0 and decoded == len(on.decodes)  # every decode made, every one not
    candidates = [k for k in _memo_rows(report) if k.startswith("candidate ")]
    assert candidates and all(_row_counts(report, k)[0] > 0 for k in candidates)  # the reruns are where it serves
    assert render_report(tmp_path / "on") == report.rstrip("\n")  # rendered again from the files: the same
    off_report = (tmp_path / "off" / "report.md").read_text()
    assert "Decode memo: on" in report and "Decode memo: off" in off_report
    assert _row_counts(off_report, "**total**") == (0, len(off.decodes))
