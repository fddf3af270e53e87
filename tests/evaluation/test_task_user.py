"""The user a task stands for: the bench's answer to the harness's questions."""

from __future__ import annotations

from pocketpilot.contracts import ToolCall, ToolSpec
from pocketpilot.evaluation.compare import run_task
from pocketpilot.evaluation.task_episode import TaskUser
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions


async def test_yes_to_a_declared_confirmation_no_to_an_unnamed_setting() -> None:
    user = TaskUser()
    send = ToolSpec(name="send", effect="send")
    power = ToolSpec(name="power_off", destructive=True, effect="setting", setting="power")
    wifi = ToolSpec(name="wifi", effect="setting", setting="wifi")
    assert await user(ToolCall(name="send", arguments={}), send)
    assert await user(ToolCall(name="power_off", arguments={}), power)
    assert not await user(ToolCall(name="wifi", arguments={"on": True}), wifi)


async def test_a_walk_sent_again_in_a_task_run_stays_held() -> None:
    """The scope guard asks the user when a held setting is sent again; the task's user says no,
    so the second try of the walk does not change the phone (allow-all would let it through)."""
    task = next(t for t in load_suite() if t.id == "ordering-parking-note-then-off")
    task = task.model_copy(update={"tools": ["notes", "power", "settings"]}) if "settings" not in task.tools else task
    oracle = oracle_actions(task)
    walk = {"kind": "tool_call", "calls": [{"name": "set_bluetooth", "arguments": {"enabled": False}}]}
    actions = [oracle[0], walk, walk, *oracle[1:]]
    episode, outcome = await run_task(task, ScriptedPlanner(actions))
    results = [r for s in episode.steps for r in s.results if s.action and s.action.kind == "tool_call"]
    codes = [r.error.code for r in results if r.error is not None]
    assert codes == ["not_allowed", "confirmation_denied"], codes
    assert outcome.success, outcome.failed_criteria
