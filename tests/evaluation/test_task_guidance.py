"""A task's operating policy reaches the planner in both modes, ahead of routed notes, and its
budget and the caller's settings take effect (the session the bench and `run --task` share)."""

from __future__ import annotations

import os

import yaml

from pocketpilot.evaluation.compare import RunSettings, load_harness_kit, run_task
from pocketpilot.evaluation.task_episode import task_config
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import parse_task

FINISH = {"kind": "finish", "summary": "done"}
POLICY = ("Operating policy of the settings desk: confirm the current value with get_settings before "
          "any change, change one setting per call, and say in the summary what the value was before.")
KIT = load_harness_kit()


def _task(goal: str, task_id: str = "policy-brightness", **extra: object):  # noqa: ANN202
    data = {
        "id": task_id, "goal": goal, "capability": "single_tool", "split": "dev", "tools": ["settings"],
        "criteria": [{"kind": "state", "path": "settings.brightness", "equals": 25}], **extra,
    }
    return parse_task(yaml.safe_load(yaml.safe_dump(data)), "inline")


async def _system(task, mode: str = "harness", settings: RunSettings | None = None) -> str:  # noqa: ANN001
    planner = ScriptedPlanner([FINISH])
    await run_task(task, planner, mode=mode, kit=KIT, settings=settings)  # type: ignore[arg-type]
    return planner.requests[0].messages[0].content


def _guidance_section(system: str) -> str:
    return system.split("Guidance:\n", 1)[1] if "Guidance:\n" in system else ""


def _policy_section(system: str) -> str:
    return system.split("Operating policy:\n", 1)[1].split("\n\nActions:", 1)[0] if "Operating policy:" in system else ""


async def test_the_policy_comes_right_after_the_rules_and_before_the_routed_notes() -> None:
    goal = "Dim the screen brightness to 25 and tell me what it was."
    plain = await _system(_task(goal))
    routed = _guidance_section(plain)
    assert routed, "the harness routes notes to this request (the test needs some to order against)"
    system = await _system(_task(goal, guidance=[POLICY]))
    assert _policy_section(system) == POLICY
    assert system.index(POLICY) < system.index("Actions:") < system.index("Guidance:\n")
    assert _guidance_section(system) == routed  # the routed notes follow, unchanged
    assert system.replace(f"\n\nOperating policy:\n{POLICY}", "") == plain  # nothing else moved


async def test_two_tasks_with_one_policy_share_a_prefix_holding_all_of_it() -> None:
    """The KV cache keeps the longest common prefix: the whole policy must be inside it, even when
    the requests differ in what they route (skills, offered actions, notes)."""
    first = await _system(_task("Dim the screen brightness to 25.", guidance=[POLICY]))
    second = await _system(_task("Turn on airplane mode.", "policy-airplane", guidance=[POLICY]))
    assert _guidance_section(first) != _guidance_section(second)  # routed differently
    shared = os.path.commonprefix([first, second])
    assert POLICY in shared


async def test_the_bare_planner_gets_the_tasks_policy_too() -> None:
    """The policy is what the task's owner tells any agent, like its memories: not a harness feature."""
    system = await _system(_task("Dim the screen brightness to 25.", guidance=[POLICY]), mode="bare")
    assert _policy_section(system) == POLICY and "Guidance:" not in system
    assert POLICY not in await _system(_task("Dim the screen brightness to 25."), mode="bare")


async def test_the_callers_guidance_replaces_the_tasks() -> None:
    task = _task("Dim the screen brightness to 25.", guidance=[POLICY])
    system = await _system(task, settings=RunSettings(guidance=("The caller's policy: never touch wifi.",)))
    assert "The caller's policy: never touch wifi." in system and POLICY not in system
    assert POLICY not in await _system(task, settings=RunSettings(guidance=()))


async def test_the_tasks_budget_and_the_callers_override_take_effect() -> None:
    tight = _task("Dim the screen brightness to 25.", guidance=[POLICY], budget={"guidance": 10})
    assert POLICY not in await _system(tight)  # left out for budget, as the task asked
    assert POLICY in await _system(tight, settings=RunSettings(budget={"guidance": 4000}))
    config = task_config(tight, RunSettings(budget={"history": 123}, max_steps=3))
    assert (config.budget.guidance, config.budget.history, config.max_steps) == (10, 123, 3)


def test_a_task_without_settings_runs_under_the_default_config() -> None:
    """The bundled suite's runs stay as they were: no field set, the same HarnessConfig."""
    from pocketpilot.harness import HarnessConfig

    task = _task("Dim the screen brightness to 25.")
    assert task_config(task) == HarnessConfig(max_steps=task.max_steps)
