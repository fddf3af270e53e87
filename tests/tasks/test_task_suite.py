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
    assert len(SUITE) >= 150
    capabilities = Counter(t.capability for t in SUITE)
    for needed in (
        "single_tool",
        "multi_step",
        "ordering",
        "error_recovery",
        "clarification",
        "conditional",
        "only_missing",
        # the capability benchmark's behaviours
        "recall",
        "reconcile_intent",
        "resume_verified",
        "distractor_memory",
        "precondition_order",
        "branch_order",
        "delegation",
    ):
        assert capabilities[needed] >= 2, needed
    assert {t.split for t in SUITE} == {"dev", "evolve", "test"}
    assert len({d for t in SUITE for d in t.domains}) >= 8
    groups = Counter(t.group for t in SUITE)
    assert set(groups) == {"tool_use", "memory", "skills", "subagent"}
    assert groups["tool_use"] >= 38  # the original tool-use tasks stay
    for group in groups:  # every group is measured on the held-out split
        assert any(t.group == group for t in load_suite("test")), group


def test_memory_tasks_seed_memories_and_subagent_tasks_delegate() -> None:
    for task in SUITE:
        if task.group == "memory" and task.capability != "clarification":
            assert task.memory, task.id
        if task.group == "subagent":
            assert any(s.delegate for s in task.oracle), task.id
            assert any(c.kind == "delegated" for c in task.criteria), task.id


def test_misleading_acknowledgements_contradict_the_starting_state() -> None:
    """A resume task seeds an assistant claim ("done") that the live state does not back up."""
    resume = [t for t in SUITE if t.capability == "resume_verified"]
    assert len(resume) >= 4
    for task in resume:
        assert any(m.source == "episode" for m in task.memory), task.id
    undone = 0
    for task in resume:
        run = prepare(task)
        verdict = verify_now(task, run)
        undone += not verdict.success
    assert undone >= len(resume) - 1  # at most one task whose claim happens to be true


def verify_now(task: TaskSpec, run):  # type: ignore[no-untyped-def]
    from pocketpilot.contracts import Episode, EpisodeHeader, PlannerInfo
    from pocketpilot.tasks import verify

    episode = Episode(
        header=EpisodeHeader(episode_id="x", request=task.goal, planner=PlannerInfo(backend="scripted", model="x")),
        steps=[],
        stop_reason="finish",
    )
    return verify(task, run.initial, run.phone.snapshot(), episode)


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
        "create_note": {"title": "Meeting room", "body": "room 4"},
        "create_event": {"title": "Trip", "date": "2025-04-10", "start_time": "09:00"},
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
