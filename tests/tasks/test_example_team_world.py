"""The README's team world (examples/team_world): a world beside the phone, with an operating
policy, an override of a phone tool, a tool whose effect depends on its argument and a team's
own check, loaded and judged through the supported path (a task folder)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_actions import call

from pocketpilot.evaluation.compare import run_task
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions

FOLDER = Path(__file__).resolve().parents[2] / "examples" / "team_world"


@pytest.fixture(scope="module")
def task():
    (only,) = load_suite(directory=FOLDER)
    return only


@pytest.mark.parametrize("mode", ["harness", "bare"])
async def test_the_oracle_passes_and_the_team_tool_wins(task, mode) -> None:
    episode, outcome = await run_task(task, ScriptedPlanner(oracle_actions(task)), mode=mode)
    assert outcome.success, outcome.failed_criteria
    started = next(r for s in episode.steps for r in s.results if r.ok and r.data and "casting_to" in r.data)
    assert started.data == {"casting_to": "kitchen"}  # the team's start_cast answered, not the phone's


async def test_doing_nothing_fails(task) -> None:
    _, outcome = await run_task(task, ScriptedPlanner([{"kind": "finish", "summary": "done"}]))
    assert not outcome.success


async def test_skipping_what_the_policy_asks_fails(task) -> None:
    actions = [call("get_cast_status"), call("start_cast", target="kitchen"), {"kind": "finish", "summary": "ok"}]
    _, outcome = await run_task(task, ScriptedPlanner(actions))
    assert not outcome.success and any("captions" in c for c in outcome.failed_criteria)


async def test_querying_captions_is_a_read_not_a_change(task) -> None:
    """captions(action=query) is declared a read: the unchanged criterion and the scope guard see none."""
    actions = [call("get_cast_status"), call("start_cast", target="kitchen"), call("captions", action="query"),
               call("captions", action="on"), {"kind": "finish", "summary": "ok"}]
    episode, outcome = await run_task(task, ScriptedPlanner(actions))
    assert outcome.success, outcome.failed_criteria
    assert all(r.ok for s in episode.steps for r in s.results)
