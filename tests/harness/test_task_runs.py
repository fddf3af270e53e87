"""Every bundled task's oracle, replayed through the real harness, satisfies its verifier (the harness half
of the standing oracle check; its bare half is in tests/tasks/test_oracle_replay_standing.py)."""

from __future__ import annotations

import pytest

from pocketpilot.evaluation.compare import run_task
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions
from pocketpilot.tracing.trace import read_trace

SUITE = load_suite()


@pytest.mark.parametrize("task", SUITE, ids=[t.id for t in SUITE])
async def test_oracle_passes_through_harness(task, tmp_path):
    planner = ScriptedPlanner(oracle_actions(task))
    episode, outcome = await run_task(task, planner, trace_dir=tmp_path)
    assert outcome.success, episode.verdict
    assert planner.remaining == 0
    replayed, complete = read_trace(outcome.trace)
    assert complete and replayed.verdict == episode.verdict


@pytest.mark.slow  # every bundled action task once more (about 10 s): a property of the suite, not of a change
async def test_doing_nothing_fails_action_tasks():
    failed = 0
    acting = [t for t in SUITE if any(s.call or s.batch for s in t.oracle)]
    for task in acting:
        _, outcome = await run_task(task, ScriptedPlanner([{"kind": "finish", "summary": "done"}]))
        failed += not outcome.success
    assert failed == len(acting)
