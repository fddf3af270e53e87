"""The bundled suite: loadable, split-isolated, and every task satisfiable but not trivially so."""

from __future__ import annotations

from collections import Counter

import pytest

from pocketpilot.contracts import AskUser, Finish, ToolCall, ToolCallAction
from pocketpilot.tasks import (
    TaskSpec,
    check_splits,
    load_suite,
    oracle_actions,
    prepare,
    run_actions,
    run_oracle,
)

SUITE = load_suite()
IDS = [t.id for t in SUITE]


def test_suite_size_and_coverage() -> None:
    assert len(SUITE) >= 30
    capabilities = Counter(t.capability for t in SUITE)
    for needed in (
        "single_tool",
        "multi_step",
        "ordering",
        "error_recovery",
        "clarification",
        "conditional",
        "only_missing",
    ):
        assert capabilities[needed] >= 2, needed
    assert {t.split for t in SUITE} == {"dev", "evolve", "test"}
    assert len({d for t in SUITE for d in t.domains}) >= 8
    assert all(t.group == "tool_use" for t in SUITE)


def test_splits_are_disjoint_and_complete() -> None:
    check_splits(SUITE)
    parts = {s: {t.id for t in load_suite(s)} for s in ("dev", "evolve", "test")}
    assert not (parts["dev"] & parts["test"]) and not (parts["dev"] & parts["evolve"])
    assert not (parts["evolve"] & parts["test"])
    assert set().union(*parts.values()) == set(IDS)


@pytest.mark.parametrize("task", SUITE, ids=IDS)
async def test_oracle_satisfies_every_criterion(task: TaskSpec) -> None:
    assert task.oracle, "every bundled task carries an oracle"
    assert len(task.oracle) <= task.max_steps
    episode, run = await run_oracle(task)
    verdict = await run.verifier(episode)
    assert verdict.success, [(c.name, c.detail) for c in verdict.criteria if not c.passed]


@pytest.mark.parametrize("task", SUITE, ids=IDS)
async def test_finishing_without_acting_fails(task: TaskSpec) -> None:
    run = prepare(task)
    episode = await run_actions(run, [Finish(summary="Done.")])
    verdict = await run.verifier(episode)
    assert not verdict.success


@pytest.mark.parametrize("task", [t for t in SUITE if t.capability == "clarification"], ids=lambda t: t.id)
async def test_clarification_tasks_fail_when_the_agent_guesses(task: TaskSpec) -> None:
    run = prepare(task)
    tool = next(c.tool for c in task.criteria if c.kind == "no_call")  # type: ignore[union-attr]
    guess = {
        "send_sms": {"to": "Alice Chen", "body": "On my way"},
        "create_alarm": {"time": "07:30"},
        "start_cast": {"target": "Living Room TV"},
    }[tool]
    episode = await run_actions(
        run,
        [ToolCallAction(calls=[ToolCall(name=tool, arguments=guess)]), AskUser(question="Anything else?")],
    )
    assert not (await run.verifier(episode)).success


async def test_ordering_task_fails_when_order_is_reversed() -> None:
    task = next(t for t in SUITE if t.id == "ordering-parking-note-then-off")
    run = prepare(task)
    actions = oracle_actions(task)
    episode = await run_actions(run, [actions[1], actions[0], actions[2]])
    verdict = await run.verifier(episode)
    assert not verdict.success
    failed = {c.name for c in verdict.criteria if not c.passed}
    assert "order create_note before power_off" in failed


async def test_prepared_runs_are_independent() -> None:
    task = next(t for t in SUITE if t.id == "settings-wifi-off")
    a = prepare(task)
    episode, b = await run_oracle(task)
    phone, executor, verifier = a
    assert phone is a.phone and executor is a.executor
    assert a.phone.state == a.initial and b.phone.state.settings.wifi is False
    assert not (await verifier(episode)).success  # a's phone never saw the calls
    assert (await b.verifier(episode)).success


def test_oracle_is_never_part_of_what_a_planner_sees() -> None:
    for task in SUITE:
        assert "oracle" not in task.goal.lower()
