"""The same task, verifier and planner on the in-process sandbox and on the simulated phone over real adb."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import yaml

from pocketpilot.contracts import Episode
from pocketpilot.executor.adb import AdbExecutor
from pocketpilot.executor.simphone._sandbox_backend import SandboxBackend
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.base import Executor, Verifier
from pocketpilot.harness.planners.scripted import ScriptedPlanner
from pocketpilot.tasks import TaskSpec, load_suite, oracle_actions, parse_task, prepare

if TYPE_CHECKING:
    from conftest import SimPhoneFactory


# Settings changed one call per step (not one batch): no dev or evolve task does only that, and the
# test split may not be cited, so the task is built here.
STEPWISE_SETTINGS = parse_task(yaml.safe_load("""
id: inline-cinema-settings-stepwise
goal: I'm at the cinema, put the ringer on silent and switch bluetooth off.
capability: multi_step
split: dev
domains: [settings]
tools: [settings]
max_steps: 5
criteria:
  - {kind: state, path: settings.ring_mode, equals: silent}
  - {kind: state, path: settings.bluetooth, equals: false}
  - {kind: unchanged, allow: [settings.ring_mode, settings.bluetooth, earbuds.connected]}  # bluetooth off drops the buds
oracle:
  - {call: set_ring_mode, args: {mode: silent}}
  - {call: set_bluetooth, args: {enabled: false}}
  - {finish: "Silent, bluetooth off."}
"""), "inline")


def _task(task_id: str) -> TaskSpec:
    if task_id == STEPWISE_SETTINGS.id:
        return STEPWISE_SETTINGS
    return next(t for t in load_suite() if t.id == task_id)


async def _run(task: TaskSpec, executor: Executor, verifier: Verifier) -> Episode:
    session = Session(
        ScriptedPlanner(oracle_actions(task), name="oracle"),
        executor,
        config=HarnessConfig(max_steps=task.max_steps),
        confirm=AllowAll(),
        verifier=verifier,
        task_id=task.id,
    )
    return await session.run(task.goal)


@pytest.mark.parametrize("task_id", ["settings-meeting-mode", STEPWISE_SETTINGS.id])
async def test_oracle_verifies_on_sandbox_and_on_simphone(
    task_id: str, simphone_factory: SimPhoneFactory
) -> None:
    task = _task(task_id)
    local = prepare(task)
    in_process = await _run(task, local.executor, local.verifier)
    assert in_process.verdict is not None and in_process.verdict.success

    remote = prepare(task)  # a fresh phone in the task's start state, served over adb
    dev = simphone_factory(backend=SandboxBackend(remote.phone))
    async with AdbExecutor(dev.serial, client=dev.server.client) as executor:
        over_adb = await _run(task, executor, remote.verifier)
    assert over_adb.stop_reason == "finish"
    assert over_adb.verdict is not None and over_adb.verdict.success, over_adb.verdict.criteria
    assert [c for _, c, _ in over_adb.tool_calls()] == [c for _, c, _ in in_process.tool_calls()]
    assert all(r is not None and r.ok for _, _, r in over_adb.tool_calls())
    # The verifier judged the phone the adb commands changed, not a copy.
    assert remote.phone.snapshot().settings == local.phone.snapshot().settings


async def test_verifier_fails_when_the_device_did_not_change(simphone_factory: SimPhoneFactory) -> None:
    task = _task("settings-meeting-mode")
    remote = prepare(task)
    dev = simphone_factory(backend=SandboxBackend(remote.phone))
    actions = [a for a in oracle_actions(task) if a.kind == "finish"]  # claims success, does nothing
    session = Session(
        ScriptedPlanner(actions), AdbExecutor(dev.serial, client=dev.server.client), verifier=remote.verifier
    )
    episode = await session.run(task.goal)
    assert episode.verdict is not None and not episode.verdict.success
