"""Long-history memory tasks: big owners, one piece of evidence among many, a frozen test split."""

from __future__ import annotations

import asyncio
import re
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketpilot.cli.main import cli
from pocketpilot.tasks import AnswerCriterion, load_suite, split_lock
from pocketpilot.tasks.long_history import (
    HISTORY_DIR,
    HISTORY_LOCK,
    MIN_MEMORIES,
    OwnerPlan,
    generate_history,
    history_drift,
    mentions,
)

ROOT = Path(__file__).resolve().parents[2]
SMALL = (OwnerPlan(tag="x1", split="dev", questions=5, actions=3, memories=500),
         OwnerPlan(tag="x2", split="test", questions=4, actions=2, memories=510))


@pytest.fixture(scope="module")
def bundled():
    return load_suite(directory=HISTORY_DIR)


@pytest.fixture(scope="module")
def small():
    return generate_history(SMALL, seed=7)


def test_the_same_seed_gives_the_same_tasks_and_another_seed_other_ones(small) -> None:
    again = generate_history(SMALL, seed=7)
    assert [t.data for t in again.tasks] == [t.data for t in small.tasks]
    other = generate_history(SMALL, seed=8)
    assert [t.data["memory"] for t in other.tasks] != [t.data["memory"] for t in small.tasks]


def test_every_owner_has_at_least_500_memories_over_months(small, bundled) -> None:
    assert {len(t.data["memory"]) for t in small.tasks} == {500, 510}
    assert len(bundled) >= 100
    for task in bundled:
        assert len(task.memory) >= MIN_MEMORIES
        when = sorted(m.created_at for m in task.memory)
        assert (when[-1] - when[0]).days >= 150, task.id  # months, not one afternoon
        assert when[-1] < datetime.fromisoformat("2025-03-14T09:30:00+01:00")  # before the sandbox's clock
    splits = {s: sum(t.split == s for t in bundled) for s in ("dev", "evolve", "test")}
    assert splits["test"] >= 60 and splits["dev"] > 0 and splits["evolve"] > 0


def test_a_question_s_answer_is_written_in_exactly_one_memory_beside_superseded_and_near_duplicates(small) -> None:
    questions = [t for t in small.tasks if t.kind == "question"]
    assert questions and any(t.superseded is not None for t in questions)
    for t in questions:
        memory = [m["content"] for m in t.data["memory"]]
        holding = [i for i, text in enumerate(memory) if any(mentions(text, v) for v in t.answer)]
        assert holding == [t.evidence], t.data["id"]
        assert len(t.distractors) >= 2 and t.evidence not in t.distractors
        if t.superseded is not None:  # an older value of the same fact, replaced by the evidence
            assert t.superseded < t.evidence  # the history is in time order
            assert not any(mentions(memory[t.superseded], v) for v in t.answer)
        criterion = next(c for c in t.data["criteria"] if c["kind"] == "answer")
        assert criterion["any_of"] == t.answer


def test_an_action_needs_the_newest_stated_wish_and_not_the_older_or_another_s(small) -> None:
    actions = [t for t in small.tasks if t.kind == "action"]
    assert actions
    for t in actions:
        memory = t.data["memory"]
        evidence = memory[t.evidence]
        assert evidence.get("tier") == "user" and evidence.get("source", "user_statement") == "user_statement"
        assert t.answer[0] in evidence["content"]
        state = next(c for c in t.data["criteria"] if c["kind"] == "state")
        call = next(s for s in t.data["oracle"] if s.get("args"))
        assert list(call["args"].values()) == [state["equals"]]
        if t.superseded is not None:
            assert t.superseded < t.evidence
            assert any(c["kind"] == "no_call" for c in t.data["criteria"])
        assert len(t.distractors) == 2 and t.answer[0] not in " ".join(memory[i]["content"] for i in t.distractors)


def test_the_bundled_questions_hold_their_answer_once(bundled) -> None:
    questions = [t for t in bundled if any(isinstance(c, AnswerCriterion) for c in t.criteria)]
    assert len([t for t in questions if t.split == "test"]) >= 40
    for task in questions:
        forms = next(c for c in task.criteria if isinstance(c, AnswerCriterion)).any_of
        holding = [m for m in task.memory if any(mentions(m.content, v) for v in forms)]
        assert len(holding) == 1, task.id


def test_the_test_split_matches_its_record_and_a_change_is_caught(tmp_path) -> None:
    assert not history_drift(), "re-record with `python -m pocketpilot.tasks.long_history --write`, saying why"
    assert len(split_lock.recorded_test_split(HISTORY_LOCK)) >= 60
    data, lock = tmp_path / "history", tmp_path / "lock.json"
    data.mkdir()
    for path in sorted(HISTORY_DIR.glob("hist-*.yaml"))[::20]:  # a few of each split
        shutil.copy(path, data)
    split_lock.write_lock(data, lock)
    one = next(p for p in sorted(data.glob("*.yaml")) if re.search(r"^split: test$", p.read_text(), re.M))
    one.write_text(one.read_text().replace("created_at: '2024", "created_at: '2023", 1))  # one memory's date
    assert split_lock.drift(data, lock)["changed"] == [one.stem]


def test_no_product_code_or_bench_names_a_history_test_task() -> None:
    ids = set(split_lock.recorded_test_split(HISTORY_LOCK))
    sources = [*ROOT.joinpath("pocketpilot").rglob("*.py"), *ROOT.joinpath("bench").glob("*.py"),
               *ROOT.joinpath("tests").rglob("*.py")]
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(ids))) + r")(?![\w-])")
    cited = [(p.name, m.group(1)) for p in sources for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert cited == []


def test_a_sample_s_oracles_pass_through_the_harness_and_bare(bundled) -> None:
    from pocketpilot.evaluation.oracle_replay import replay_oracles

    sample = [t for t in bundled if t.split == "dev"][::5]
    assert {t.criteria[0].kind for t in sample} >= {"answer", "state"}
    assert asyncio.run(replay_oracles(sample, modes=("harness", "bare"))) == []


@pytest.mark.slow
def test_every_oracle_passes_through_the_harness_and_bare(bundled) -> None:
    from pocketpilot.evaluation.oracle_replay import replay_oracles

    assert asyncio.run(replay_oracles(bundled, modes=("harness", "bare"))) == []


@pytest.mark.slow
def test_the_command_regenerates_the_committed_folder(tmp_path) -> None:
    result = CliRunner().invoke(cli, ["tasks", "generate-history", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "memories per owner: 520" in result.output
    committed = {p.name: p.read_bytes() for p in HISTORY_DIR.iterdir()}
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == committed
