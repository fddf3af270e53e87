"""Tasks that bring their own world: loaded from a folder outside the package, run, verified, audited."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pocketpilot.contracts import Finish, ToolCall, ToolCallAction
from pocketpilot.errors import TaskSpecError, WorldError
from pocketpilot.executor.tools import tool
from pocketpilot.tasks import (
    ModelWorld,
    TaskWorld,
    exposed_tools,
    load_suite,
    load_task,
    parse_task,
    prepare,
    run_actions,
    run_oracle,
)
from pocketpilot.tasks.audit import audit_task, perturbed_oracles
from pocketpilot.tasks.world import SandboxWorld

WORLD_DIR = Path(__file__).parent / "outside_world"
TASKS = {t.id: t for t in load_suite(directory=WORLD_DIR)}


def _task(task_id: str, **update: Any) -> Any:
    data = TASKS[task_id].model_dump(exclude_unset=True) | update
    return parse_task(data, task_id, roots=[WORLD_DIR])


def test_the_folder_is_importable_only_while_its_world_loads() -> None:
    assert set(TASKS) == {"gh-water-fern", "gh-cool-then-shutdown", "gh-basil-and-wifi"}
    assert str(WORLD_DIR) not in sys.path and str(WORLD_DIR.resolve()) not in sys.path
    assert TASKS["gh-water-fern"].roots[0] == WORLD_DIR.resolve()


def test_apps_classes_factories_and_tool_functions_all_become_tools() -> None:
    run = prepare(TASKS["gh-water-fern"])
    names = [t.name for t in run.executor.tools()]
    # the class's tools (exposed by its app name), the factory's read_moisture; lookup_species
    # is in the world but not in the task's tools
    assert names == ["list_plants", "add_plant", "water_plant", "remove_plant", "set_temperature", "shutdown",
                     "read_moisture"]
    assert "lookup_species" in run.world.tool_names() and run.phone is None
    specs = run.specs()
    assert specs["water_plant"].id_arg == "plant_id" and specs["read_moisture"].read_only
    assert specs["remove_plant"].destructive and specs["set_temperature"].setting == "temperature"


async def test_unexposed_tools_are_refused_like_unknown_ones() -> None:
    run = prepare(TASKS["gh-water-fern"])
    result = await run.executor.call(ToolCall(name="lookup_species", arguments={"name": "fern"}))
    assert not result.ok and result.error is not None and result.error.code == "unknown_tool"


@pytest.mark.parametrize("task_id", sorted(TASKS))
async def test_oracle_passes_doing_nothing_fails_and_broken_oracles_fail(task_id: str) -> None:
    task = TASKS[task_id]
    episode, run = await run_oracle(task)
    verdict = await run.verifier(episode)
    assert verdict.success, [(c.name, c.detail) for c in verdict.criteria if not c.passed]
    lazy = prepare(task)
    assert not (await lazy.verifier(await run_actions(lazy, [Finish(summary="Done.")]))).success
    report = await audit_task(task)
    assert report.ok, report
    assert report.perturbations_failing > 0 and len(perturbed_oracles(task)) == report.perturbations


async def test_state_criteria_read_the_worlds_own_state() -> None:
    task = TASKS["gh-water-fern"]
    run = prepare(task)
    assert run.initial.plants[0].moisture == 30  # type: ignore[union-attr]
    too_much = [ToolCallAction(calls=[ToolCall(name="read_moisture", arguments={"plant_id": "p1"})]),
                ToolCallAction(calls=[ToolCall(name="water_plant", arguments={"plant_id": "p1", "ml": 900})]),
                Finish(summary="watered")]
    verdict = await run.verifier(await run_actions(run, too_much))
    failed = {c.name: c.detail for c in verdict.criteria if not c.passed}
    assert failed == {"state plants.0.moisture between 55 and 80": "plants.0.moisture is 100.0"}


async def test_the_wrong_plant_changes_what_unchanged_forbids() -> None:
    run = prepare(TASKS["gh-water-fern"])
    wrong = [ToolCallAction(calls=[ToolCall(name="read_moisture", arguments={"plant_id": "p1"})]),
             ToolCallAction(calls=[ToolCall(name="water_plant", arguments={"plant_id": "p2", "ml": 300})]),
             Finish(summary="watered")]
    verdict = await run.verifier(await run_actions(run, wrong))
    failed = {c.name: c.detail for c in verdict.criteria if not c.passed}
    assert "plants.1.moisture: 10.0 -> 40.0" in failed["nothing else changed (allowed: plants.0.moisture, "
                                                      "plants.0.watered_ml)"]


async def test_a_world_beside_the_sandbox_addresses_both_states() -> None:
    task = TASKS["gh-basil-and-wifi"]
    run = prepare(task)
    assert run.phone is not None and isinstance(run.initial, dict)
    assert run.initial["settings"]["wifi"] is True and run.initial["plants"] == []
    assert exposed_tools(task) == ["get_settings", "set_wifi", "list_plants", "add_plant", "water_plant",
                                   "remove_plant", "set_temperature", "shutdown", "lookup_species"]
    only_wifi = [ToolCallAction(calls=[ToolCall(name="set_wifi", arguments={"enabled": False})]), Finish(summary="ok")]
    verdict = await run.verifier(await run_actions(run, only_wifi))
    assert {c.name for c in verdict.criteria if not c.passed} == {
        "state plants contains a new {\"name\": \"basil\"}", "state plants.0.species in [\"basil\", \"ocimum basilicum\"]",
        "count add_plant >= 1 and <= 1"}


def test_snapshot_restore_and_diff_over_a_model_world() -> None:
    run = prepare(TASKS["gh-cool-then-shutdown"])
    world = run.world
    before = world.snapshot()
    (member,) = world.members
    assert isinstance(member, ModelWorld)
    app_state = member.state
    app_state.temperature = 12.0
    app_state.powered = False
    assert [(c.path, c.before, c.after) for c in world.diff(before, world.snapshot())] == [
        ("powered", True, False), ("temperature", 21.0, 12.0)]
    world.restore(before)
    assert member.state is app_state  # the tools' state object is kept, its values put back
    assert app_state.temperature == 21.0 and app_state.powered is True
    assert world.diff(before, world.snapshot()) == []


def test_a_combined_world_restores_each_member() -> None:
    run = prepare(TASKS["gh-basil-and-wifi"])
    snap = run.world.snapshot()
    assert run.phone is not None
    run.phone.state.settings.wifi = False
    run.world.members[1].state.temperature = 30.0  # type: ignore[attr-defined]
    run.world.restore(snap)
    assert run.phone.state.settings.wifi is True and run.world.dump() == snap


def test_two_members_sharing_a_state_field_or_a_tool_keep_each_name_meaning_one_thing() -> None:
    from pydantic import BaseModel

    class Clash(BaseModel):
        settings: dict[str, Any] = {}

    both = TaskWorld([SandboxWorld(), ModelWorld(Clash())])
    with pytest.raises(ValueError, match="several worlds have a field 'settings'"):
        both.check_path("settings.wifi")
    both.check_path("sandbox.settings.wifi")

    class Power:
        def __init__(self, state: Any) -> None:
            pass

        @tool(effect="update", destructive=True)
        def power_off(self) -> None:
            """Off."""

    with pytest.raises(WorldError, match="tool 'power_off' is offered by both"):
        TaskWorld([SandboxWorld(), ModelWorld(None, [Power])]).executor(["power_off"])


def test_a_world_declares_whether_its_calls_may_run_concurrently() -> None:
    serial = prepare(TASKS["gh-cool-then-shutdown"]).world.members[0]
    assert serial.registry().concurrent is False
    parallel = _task("gh-cool-then-shutdown", world={**TASKS["gh-cool-then-shutdown"].world.model_dump(exclude_unset=True),
                                                    "concurrent": True})
    assert prepare(parallel).world.members[0].registry().concurrent is True


def test_a_factory_must_return_tools() -> None:
    with pytest.raises(WorldError, match="returned int"):
        ModelWorld(None, [lambda state: 3])
    with pytest.raises(WorldError, match="has no @tool methods"):
        ModelWorld(None, [type("Empty", (), {"__init__": lambda self, state: None})])


# ---------------------------------------------------------------- bad worlds, refused at load


def _folder(tmp_path: Path, world: dict[str, Any], criteria: list[dict[str, Any]] | None = None,
            **extra: Any) -> Path:
    """A user's task folder: a copy of the greenhouse package and one task file."""
    shutil.copytree(WORLD_DIR / "greenhouse", tmp_path / "greenhouse")
    data = {"id": "bad-world", "goal": "Do the thing.", "capability": "single_tool", "split": "dev",
            "world": world, "criteria": criteria or [{"kind": "state", "path": "powered", "equals": False}], **extra}
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


GOOD_WORLD = {"apps": ["greenhouse.app:GreenhouseApp"], "state_model": "greenhouse.state:GreenhouseState"}


@pytest.mark.parametrize(
    ("world", "extra", "message"),
    [
        ({**GOOD_WORLD, "apps": ["greenhouse.nope:App"]}, {},
         "world.apps[0]: 'greenhouse.nope:App': cannot import 'greenhouse.nope': ModuleNotFoundError"),
        ({**GOOD_WORLD, "apps": ["greenhouse.app:Missing"]}, {}, "has no attribute 'Missing'"),
        ({**GOOD_WORLD, "state_model": "greenhouse.app:GreenhouseApp"}, {}, "is not a pydantic BaseModel class"),
        ({**GOOD_WORLD, "initial_state": {"temperature": 90}}, {},
         "world.initial_state does not fit GreenhouseState: temperature: Input should be less than or equal to 35"),
        ({**GOOD_WORLD, "initial_state": {"plants": [{"id": "p1"}]}}, {}, "plants.0.name: Field required"),
        (GOOD_WORLD, {"criteria": [{"kind": "state", "path": "plants.0.colour", "equals": "green"}]},
         "criteria[0]: bad path 'plants.0.colour': plants.0 has no field 'colour'"),
        (GOOD_WORLD, {"criteria": [{"kind": "state", "path": "settings.wifi", "equals": False}]},
         "the state has no field 'settings'"),
        (GOOD_WORLD, {"tools": ["set_wifi"]}, "unknown tool 'set_wifi' in tools"),
        (GOOD_WORLD, {"initial_state": {"settings": {"wifi": False}}}, "initial_state patches the sandbox phone"),
        ({"apps": [], "sandbox": False}, {}, "a world without apps needs the sandbox"),
        ({**GOOD_WORLD, "apps": ["greenhouse/app.py"]}, {}, "'greenhouse/app.py' is not a 'module:attr' reference"),
    ],
)
def test_a_bad_world_is_one_line_naming_the_culprit(tmp_path: Path, world: dict[str, Any], extra: dict[str, Any],
                                                    message: str) -> None:
    path = _folder(tmp_path, world, **extra)
    with pytest.raises(TaskSpecError) as info:
        load_task(path)
    text = str(info.value)
    assert message in text and str(path) in text and "\n" not in text, text


def test_a_tool_whose_id_arg_is_not_a_parameter_is_a_world_error(tmp_path: Path) -> None:
    module = tmp_path / "bad_ids_tools.py"
    module.write_text(
        "from pocketpilot.executor.tools import tool\n\n"
        "@tool(effect='delete', destructive=True, id_arg='plant')\n"
        "def remove(plant_id: str) -> None:\n    '''Remove.'''\n"
    )
    path = _folder(tmp_path, {**GOOD_WORLD, "apps": [*GOOD_WORLD["apps"], "bad_ids_tools:remove"]})
    with pytest.raises(WorldError) as info:
        load_task(path)
    assert "world.apps[1]: 'bad_ids_tools:remove': importing 'bad_ids_tools' failed" in str(info.value)
    assert "id_arg 'plant' is not a parameter of remove" in str(info.value)


def test_a_factory_whose_tool_declares_a_missing_name_arg_is_refused(tmp_path: Path) -> None:
    module = tmp_path / "bad_name_factory.py"
    module.write_text(
        "from pocketpilot.executor.tools import Tool\n\n"
        "def make(state):\n"
        "    def rename(plant_id: str) -> None:\n        '''Rename.'''\n"
        "    return [Tool(rename, effect='update', name_arg='title')]\n"
    )
    path = _folder(tmp_path, {**GOOD_WORLD, "apps": ["bad_name_factory:make"]})
    with pytest.raises(WorldError, match="name_arg 'title' is not a parameter of rename"):
        load_task(path)
