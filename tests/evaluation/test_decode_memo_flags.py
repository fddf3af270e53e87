"""``--decode-memo PATH`` of ``pocketpilot bench`` and ``bench/bench_ablation.py``: opt-in, and refused where it would mislead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_scripts import bench_script
from click.testing import CliRunner
from greedy_fakes import GreedyStandIn

from pocketpilot.cli import bench as bench_cli
from pocketpilot.contracts import PlannerTurn
from pocketpilot.harness.base import PlannerOutput, PlanRequest

FINISH = {"kind": "finish", "summary": "Done."}


class Finisher(GreedyStandIn):
    """A greedy stand-in that finishes at once (a function of nothing but the prompt); counts decodes."""

    def __init__(self) -> None:
        super().__init__()
        self.decodes = 0

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        from pocketpilot.contracts import ACTION_ADAPTER

        self.decodes += 1
        return PlannerOutput(action=ACTION_ADAPTER.validate_python(FINISH), turn=PlannerTurn(raw=json.dumps(FINISH)))


def test_bench_serves_a_second_run_from_the_memo_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planners: list[Finisher] = []

    def build(*a: Any, **k: Any) -> Finisher:
        planners.append(Finisher())
        return planners[-1]

    monkeypatch.setattr(bench_cli, "build_planner", build)
    memo = tmp_path / "memo.jsonl"
    args = ["--task-id", "clarify-text-him", "--task-id", "settings-wifi-off", "--no-embedder"]
    for _ in range(2):
        result = CliRunner().invoke(bench_cli.bench, [*args, "--decode-memo", str(memo)])
        assert result.exit_code == 0, result.output
    assert [p.decodes for p in planners] == [2, 0] and "decode memo: 2 hit(s)" in result.output
    result = CliRunner().invoke(bench_cli.bench, args)  # off by default: every step decoded, no file written
    assert result.exit_code == 0 and planners[-1].decodes == 2 and "decode memo" not in result.output
    assert len(memo.read_text().splitlines()) == 2


def test_bench_refuses_a_corrupt_memo_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pocketpilot.cli.main import cli

    monkeypatch.setattr(bench_cli, "build_planner", lambda *a, **k: Finisher())
    memo = tmp_path / "memo.jsonl"
    memo.write_text("not json\n")
    result = CliRunner().invoke(cli, ["bench", "--task-id", "settings-wifi-off", "--no-embedder",
                                      "--decode-memo", str(memo)])
    assert result.exit_code == 2 and "memo.jsonl:1" in result.output


def test_the_ablation_refuses_the_memo_with_the_untouched_check(capsys: pytest.CaptureFixture[str]) -> None:
    with bench_script("bench_ablation") as module:
        code = module.main(["--task-id", "settings-wifi-off", "--verify-untouched", "1", "--decode-memo", "/tmp/m.jsonl"],
                           planner_for=lambda task, off: Finisher())
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--verify-untouched" in err


def test_the_ablation_serves_decodes_it_already_made(tmp_path: Path) -> None:
    made: list[Finisher] = []

    def planner_for(task: Any, off: str | None) -> Finisher:
        made.append(Finisher())
        return made[-1]

    memo = tmp_path / "memo.jsonl"
    with bench_script("bench_ablation") as module:
        for _ in range(2):
            assert module.main(["--task-id", "settings-wifi-off", "--decode-memo", str(memo)], planner_for=planner_for) == 0
    assert [p.decodes for p in made] == [1, 0]
