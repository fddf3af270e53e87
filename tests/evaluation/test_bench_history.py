"""bench/bench_history.py: token F1, the stated sample, and the bare-vs-harness report, without a model."""

from __future__ import annotations

import asyncio
import json

import pytest
from bench_scripts import bench_script

from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import oracle_actions


@pytest.fixture(scope="module")
def bench():
    with bench_script("bench_history") as module:
        yield module


def test_token_f1_is_squad_style_and_takes_the_best_form(bench) -> None:
    assert bench.token_f1("The Salt Orchard.", ["The Salt Orchard"]) == 1.0
    five_two_right = 2 * (2 / 5) / (2 / 5 + 1)
    assert bench.token_f1("It is on 3 June", ["3 June", "June 3"]) == pytest.approx(five_two_right)
    assert bench.token_f1("€45", ["45 euros", "€45"]) == 1.0
    assert bench.token_f1("", ["anything"]) == 0.0
    assert bench.token_f1("no idea", ["Biscuit"]) == 0.0


def test_a_sample_holds_questions_and_actions_in_proportion_and_is_the_same_each_time(bench) -> None:
    first = bench.select("dev", 8, [])
    assert [t.id for t in first] == [t.id for t in bench.select("dev", 8, [])]
    kinds = [bench.kind_of(t) for t in first]
    assert len(first) == 8 and kinds.count("action") == 2 and kinds.count("question") == 6
    assert {t.split for t in first} == {"dev"}


def test_oracle_runs_fill_every_column_resume_and_show_the_lift(bench, tmp_path) -> None:
    tasks = bench.select("dev", 3, [])
    out = tmp_path / "history.json"
    calls: list[tuple[str, str]] = []

    def oracle(task, mode):
        calls.append((task.id, mode))
        return ScriptedPlanner(oracle_actions(task))

    data = asyncio.run(bench.run_modes(tasks, oracle, out=out, meta={"planner": {"model": "oracle"}},
                                       log=lambda line: None))
    assert calls == [(t.id, m) for t in tasks for m in ("bare", "harness")]
    for mode in ("bare", "harness"):
        s = data["runs"][mode]["summary"]
        assert s["pass_rate"] == 1.0 and s["answered_rate"] == 1.0 and s["asked_back_rate"] == 0.0
        assert s["mean_f1"] == 1.0
    assert data["lift_points"] == 0.0 and data["f1_lift"] == 0.0
    harness_rows = data["runs"]["harness"]["rows"]
    assert all(r["prior_messages"] == 0 for r in harness_rows)  # the harness gets the store, not the chat
    assert all(r["prior_messages"] > 0 for r in data["runs"]["bare"]["rows"])
    assert json.loads(out.read_text())["runs"]["bare"]["summary"]["tasks"] == 3
    calls.clear()
    asyncio.run(bench.run_modes(tasks, oracle, out=out, meta={"planner": {"model": "oracle"}}, log=lambda line: None))
    assert calls == []  # every pair resumed from the report
    text = bench.table(data)
    assert "| bare | 3 | 100.0%" in text and "lift (harness - bare, 3 paired tasks): +0.0 points" in text


def test_asked_back_and_a_wrong_answer_count_against_a_mode(bench) -> None:
    task = next(t for t in bench.select("dev", None, []) if bench.kind_of(t) == "question")
    asked = ScriptedPlanner([{"kind": "ask_user", "question": task.goal}])
    wrong = ScriptedPlanner([{"kind": "finish", "summary": "I do not know."}])
    planners = {"bare": wrong, "harness": asked}
    data = asyncio.run(bench.run_modes([task], lambda t, m: planners[m], meta={}, log=lambda line: None))
    bare, harness = (data["runs"][m]["summary"] for m in ("bare", "harness"))
    assert bare["answered_rate"] == 1.0 and bare["mean_f1"] == 0.0 and bare["pass_rate"] == 0.0
    assert harness["asked_back_rate"] == 1.0 and harness["answered_rate"] == 0.0


def test_bad_arguments_exit_2(bench) -> None:
    assert bench.main(["--modes", "both"]) == 2
    assert bench.main(["--sample", "0"]) == 2


def test_a_variant_is_recorded_and_a_resume_under_another_variant_is_refused(bench, tmp_path) -> None:
    out = tmp_path / "history.json"
    variant = "with-whole_closes_search+as_messages+drop_recall_note"
    assert bench.main(["--planner", "oracle", "--ids", "hist-d1-q00", "--modes", "harness",
                       "--variant", variant, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["variant"] == variant and data["runs"]["harness"]["summary"]["passed"] == 1
    with pytest.raises(SystemExit, match="η variant"):
        bench.main(["--planner", "oracle", "--ids", "hist-d1-q00", "--modes", "harness", "--out", str(out)])
    with pytest.raises(SystemExit):
        bench.main(["--variant", "with-no_such_switch"])


def test_the_variant_kit_turns_the_switches_on_and_off(bench) -> None:
    memory = bench.variant_kit(bench.load_harness_kit(), "no-as_messages+drop_recall_note").eta.memory
    assert not memory.as_messages and not memory.drop_recall_note and memory.whole_closes_search
    memory = bench.variant_kit(bench.load_harness_kit(), "with-newest_last").eta.memory
    assert memory.newest_last and memory.as_messages and memory.drop_recall_note and memory.whole_closes_search
    assert bench.load_harness_kit().eta.memory is None  # the defaults: MemorySettings.defaults()
