"""A team's world beside the sandbox (issue 34 item 5): shared tool names, shared state fields,
and the phone's clock and power seen from the world's tools."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError
from scripted_actions import call_action

from pocketpilot.contracts import Finish, ToolCall
from pocketpilot.errors import TaskSpecError, WorldError
from pocketpilot.executor.sandbox import SandboxPhone
from pocketpilot.executor.tools import tool
from pocketpilot.tasks import ModelWorld, TaskWorld, load_task, parse_task, prepare, run_actions, run_oracle
from pocketpilot.tasks.audit import audit_task
from pocketpilot.tasks.spec import WorldSpec
from pocketpilot.tasks.world import Phone, SandboxWorld

HERE = Path(__file__).parent / "beside_world"
TASK = HERE / "cast-with-override.yaml"


def _task(**change: Any) -> Any:
    data = yaml.safe_load(TASK.read_text())
    world = {**data["world"], **change.pop("world", {})}
    for key in [k for k, v in world.items() if v is None]:
        del world[key]
    return parse_task({**data, "world": world, **change}, "beside", roots=[HERE])


# ---------------------------------------------------------------- tool names both offer


async def test_the_world_wins_a_shared_tool_name_when_the_task_says_so() -> None:
    run = prepare(load_task(TASK))
    result = await run.executor.call(ToolCall(name="get_cast_status"))
    assert result.ok and result.data["source"] == "team"
    await run.executor.call(ToolCall(name="start_cast", arguments={"target": "kitchen"}))
    assert run.phone is not None and run.phone.state.cast.active is False  # the sandbox's cast is untouched
    spec = next(t for t in run.executor.tools() if t.name == "start_cast")
    assert spec.world is None or spec.world != "sandbox"


@pytest.mark.parametrize("override", [True, ["get_cast_status", "start_cast"]])
async def test_an_override_task_passes_its_oracle_and_the_audit(override: Any) -> None:
    task = _task(world={"override": override})
    episode, run = await run_oracle(task)
    verdict = await run.verifier(episode)
    assert verdict.success, [(c.name, c.detail) for c in verdict.criteria if not c.passed]
    report = await audit_task(task)
    assert report.ok, report


def test_an_exposed_shared_name_without_override_is_a_typed_error_naming_the_fix() -> None:
    with pytest.raises(WorldError, match="tool 'get_cast_status' is offered by both sandbox and world: set "
                                         "world.override"):
        _task(world={"override": None})
    with pytest.raises(WorldError, match="offered by both"):
        _task(world={"override": ["start_cast"]})  # get_cast_status is still exposed and unsettled
    everything = TaskWorld([SandboxWorld(), ModelWorld(*_cast_world())])
    with pytest.raises(WorldError, match="offered by both"):
        everything.executor()  # all tools: the shared ones too


async def test_an_unexposed_shared_name_is_never_an_error() -> None:
    task = _task(world={"override": None}, tools=["write_log", "set_wifi"],
                 criteria=[{"kind": "state", "path": "log", "contains": "kitchen"}],
                 oracle=[{"call": "write_log", "args": {"text": "kitchen"}}, {"finish": "logged"}])
    episode, run = await run_oracle(task)
    assert (await run.verifier(episode)).success
    shared = await run.executor.call(ToolCall(name="get_cast_status"))
    assert not shared.ok and shared.error is not None and shared.error.code == "unknown_tool"


def test_an_override_must_name_a_shared_tool_and_needs_the_sandbox() -> None:
    with pytest.raises(WorldError, match="override names 'write_log', which the sandbox and the world do not both"):
        _task(world={"override": ["write_log"]})
    with pytest.raises(TaskSpecError, match="override settles tool names the world shares with the sandbox"):
        _task(world={"sandbox": False})
    with pytest.raises(ValidationError):
        WorldSpec.model_validate({"apps": ["castworld:TeamCast"], "sandbox": True, "override": "yes"})


def test_a_world_task_without_override_keeps_its_digest() -> None:
    plain = _task(world={"override": None}, tools=["write_log", "set_wifi"],
                  criteria=[{"kind": "state", "path": "log", "contains": "kitchen"}], oracle=[])
    assert "override" not in plain.model_dump()["world"]
    assert "override" in _task().model_dump()["world"]


# ---------------------------------------------------------------- state fields both have


def test_a_shared_state_field_is_addressed_under_each_worlds_name() -> None:
    run = prepare(load_task(TASK))
    dump = run.world.dump()
    assert "cast" not in dump and "now" not in dump
    assert dump["sandbox"]["cast"]["active"] is False and dump["world"]["cast"]["target"] is None
    assert dump["settings"]["wifi"] is True and dump["log"] == []  # unshared fields keep their plain path
    run.world.check_path("world.cast.target")
    run.world.check_path("sandbox.cast.available_targets.0")
    with pytest.raises(ValueError, match="several worlds have a field 'cast'; address it as sandbox.cast.active "
                                         "or world.cast.active"):
        run.world.check_path("cast.active")
    with pytest.raises(ValueError, match="under 'world' are only the fields several worlds share"):
        run.world.check_path("world.log")


def test_a_bare_shared_path_in_a_criterion_is_refused_at_load() -> None:
    with pytest.raises(TaskSpecError, match="several worlds have a field 'cast'"):
        _task(criteria=[{"kind": "state", "path": "cast.target", "equals": "kitchen"}])


async def test_changes_to_a_shared_field_are_told_apart_restored_and_judged() -> None:
    run = prepare(load_task(TASK))
    before = run.world.snapshot()
    wrong = [call_action("start_cast", target="bedroom"), call_action("set_wifi", enabled=False),
             Finish(summary="done")]
    verdict = await run.verifier(await run_actions(run, wrong))
    failed = {c.name: c.detail for c in verdict.criteria if not c.passed}
    assert failed == {"state world.cast.target == \"kitchen\"": "world.cast.target is \"bedroom\""}
    paths = [c.path for c in run.world.diff(before, run.world.snapshot())]
    assert "world.cast.target" in paths and not any(p.startswith("sandbox.cast") for p in paths)
    run.world.restore(before)
    assert run.world.dump() == before


async def test_unchanged_sees_a_change_to_the_sandboxs_side_of_a_shared_field() -> None:
    task = _task(tools=["teamcast", "set_wifi", "stop_cast"], world={"override": ["get_cast_status", "start_cast"]})
    run = prepare(task)
    assert run.phone is not None
    run.phone.state.cast.active, run.phone.state.cast.target = True, "tv"
    run.initial = run.world.snapshot()
    actions = [call_action("start_cast", target="kitchen"), call_action("stop_cast"),
               call_action("set_wifi", enabled=False), Finish(summary="done")]
    verdict = await run.verifier(await run_actions(run, actions))
    failed = {c.name: c.detail for c in verdict.criteria if not c.passed}
    assert list(failed) == ["nothing else changed (allowed: world.cast, settings.wifi)"]
    assert "sandbox.cast.active: true -> false" in failed["nothing else changed (allowed: world.cast, settings.wifi)"]


# ---------------------------------------------------------------- the phone's clock and power


async def test_a_world_tool_reads_the_phones_clock() -> None:
    run = prepare(load_task(TASK))
    assert run.phone is not None
    await run.executor.call(ToolCall(name="start_cast", arguments={"target": "kitchen"}))
    started = run.world.dump()["world"]["cast"]["started_at"]
    assert started == run.phone.state.now.isoformat()  # the phone's, not the world state's own 2030 clock


async def test_a_world_tool_fails_like_a_sandbox_tool_once_the_phone_is_off() -> None:
    run = prepare(_task(tools=["teamcast", "set_wifi", "power_off"]))
    before = await run.executor.call(ToolCall(name="write_log", arguments={"text": "a"}))
    assert before.ok
    assert (await run.executor.call(ToolCall(name="power_off"))).ok
    sandbox = await run.executor.call(ToolCall(name="set_wifi", arguments={"enabled": False}))
    world = await run.executor.call(ToolCall(name="write_log", arguments={"text": "b"}))
    read = await run.executor.call(ToolCall(name="get_cast_status"))
    assert sandbox.error is not None and sandbox.error.code == "device_off"
    for result in (world, read):
        assert not result.ok and result.error is not None
        assert (result.error.code, result.error.message) == (sandbox.error.code, sandbox.error.message)
    assert run.world.dump()["log"] == ["a"]  # the refused call never ran


def test_a_phone_without_the_sandbox_is_the_worlds_own_clock_and_always_on() -> None:
    from castworld import CastState  # type: ignore[import-not-found]  # noqa: F401 - imported by _cast_world

    state, apps = _cast_world()
    alone = ModelWorld(state, apps)
    assert alone.phone.now == datetime(2030, 1, 1, 12, 0) and alone.phone.powered_on
    alone.phone.require_on()
    phone = SandboxPhone()
    beside = ModelWorld(*_cast_world())
    TaskWorld([SandboxWorld(phone), beside], overrides=True)
    assert beside.phone.now == phone.state.now
    phone.state.device.powered_on = False
    assert not beside.phone.powered_on
    with pytest.raises(Exception, match="powered off") as info:
        beside.phone.require_on()
    assert getattr(info.value, "code", None) == "device_off"


def test_a_factory_or_class_without_a_phone_parameter_is_built_as_before() -> None:
    seen: dict[str, Any] = {}

    class Plain(BaseModel):
        x: int = 0

    def make(state: Plain, phone: Phone) -> Any:
        seen["phone"] = phone

        @tool(effect="read")
        def peek() -> int:
            """Peek."""
            return state.x

        return [peek]

    world = ModelWorld(Plain(), [make, lambda state: []])
    assert seen["phone"] is world.phone


def _cast_world() -> tuple[Any, list[Any]]:
    import sys

    sys.path.insert(0, str(HERE))
    try:
        from castworld import CastState, TeamCast  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(HERE))
    return CastState(), [TeamCast]


async def test_the_override_task_passes_through_the_harness_and_bare() -> None:
    from pocketpilot.evaluation.oracle_replay import replay_oracles
    from pocketpilot.evaluation.task_episode import load_harness_kit

    blocked = await replay_oracles([load_task(TASK)], modes=("harness", "bare"), kit=load_harness_kit())
    assert blocked == [], "\n".join(b.line() for b in blocked)
