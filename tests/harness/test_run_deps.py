"""The run core reads what the session hands it (RunDeps, RunSetup), never the session itself."""

from __future__ import annotations

import dataclasses

import pytest

from pocketpilot.executor.tools import ToolRegistry
from pocketpilot.harness import DenyAll, Session
from pocketpilot.harness.config import HarnessConfig
from pocketpilot.harness.loop import Run
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.policies.base import Advice, BasePolicy, RunView, StepReport
from pocketpilot.harness.run_state import RunDeps, RunSetup, RunState
from pocketpilot.harness.session import HarnessConfig as SessionHarnessConfig
from pocketpilot.tracing.trace import read_trace

LAMP = {"kind": "tool_call", "calls": [{"name": "set_lamp", "arguments": {"on": True}}]}
FINISH = {"kind": "finish", "summary": "done"}
SEEN: list[object] = []


class Records(BasePolicy):
    """Keeps the view each step's advice is asked with."""

    name = "records_view"

    def after_step(self, report: StepReport, run: RunView) -> Advice | None:
        SEEN.append(run)
        return None


def _deps(planner: ScriptedPlanner, registry: ToolRegistry) -> RunDeps:
    def no_child(*_: object) -> Session:
        raise AssertionError("no hand-off in this run")

    return RunDeps(planner=planner, executor=registry, memory=None, skills=None, confirm=DenyAll(),
                   verifier=None, observer=None, spawn_child=no_child)


async def test_a_run_goes_from_deps_and_setup_alone_and_names_its_trace(registry, toys, tmp_path):
    planner = ScriptedPlanner([LAMP, FINISH])
    await planner.load()
    setup = RunSetup(config=HarnessConfig(), tools={t.name: t for t in registry.tools()},
                     kinds=("tool_call", "finish"), trace_dir=tmp_path)
    run = Run(RunState(_deps(planner, registry), setup, "turn on the lamp"))
    assert run.state.trace_path is not None and run.state.trace_path.parent == tmp_path
    await run.start()
    await run.loop()
    episode = await run.finish(run.state.stop_reason, run.state.stop_detail)
    assert toys.lamp and episode.stop_reason == "finish"
    loaded, complete = read_trace(run.state.trace_path)
    assert complete and loaded.steps == episode.steps


def test_deps_and_setup_are_frozen(registry):
    deps = _deps(ScriptedPlanner([FINISH]), registry)
    setup = RunSetup(config=HarnessConfig(), tools={}, kinds=("finish",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        deps.memory = object()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setup.kinds = ()  # type: ignore[misc]


async def test_run_holds_its_state_and_policies_see_the_state(registry, tmp_path):
    assert not issubclass(Run, RunState)
    SEEN.clear()
    session = Session(ScriptedPlanner([LAMP, FINISH]), registry, trace_dir=tmp_path, policies=[Records()])
    await session.run("turn on the lamp")
    assert SEEN and all(type(view) is RunState for view in SEEN)


async def test_session_trace_path_is_the_latest_runs_and_read_only(registry, tmp_path):
    session = Session(ScriptedPlanner([FINISH, FINISH]), registry, trace_dir=tmp_path)
    assert session.trace_path is None
    first = await session.run("one")
    assert session.trace_path == tmp_path / f"{first.header.episode_id}.jsonl"
    second = await session.run("two")
    assert session.trace_path == tmp_path / f"{second.header.episode_id}.jsonl" and session.trace_path.exists()
    with pytest.raises(AttributeError):
        session.trace_path = tmp_path  # type: ignore[misc]


def test_harness_config_keeps_its_import_path():
    assert SessionHarnessConfig is HarnessConfig
