"""The factory on a user's world: the same templates, tasks in the task-file world: format."""

from __future__ import annotations

import shutil

import pytest
import tiny_world
import yaml

from pocketpilot.errors import WorldError
from pocketpilot.tasks import load_suite
from pocketpilot.tasks.audit import audit_task
from pocketpilot.tasks.gen_world import UserGenWorld, load_gen_world
from pocketpilot.tasks.generate import generate_async, write_tasks
from pocketpilot.tasks.spec import WorldSpec
from pocketpilot.tasks.validate import validate_task


def test_a_world_loads_from_a_reference_or_a_file(tmp_path) -> None:
    world = load_gen_world("tiny_world:FULL_WORLD")
    assert isinstance(world, UserGenWorld)
    assert {t.name for t in world.tools()} == {"kennel_status", "set_heating", "set_feeding", "book_stay",
                                               "message_owner", "cancel_stay", "home_clock", "sprinkler"}
    assert world.app_of("set_heating") == "kennel" and world.domains(["sprinkler", "home_clock"]) == []
    path = tmp_path / "world.yaml"
    path.write_text(yaml.safe_dump({"world": tiny_world.WORLD}))
    assert {t.name for t in load_gen_world(str(path)).tools()} >= {"set_heating"}
    with pytest.raises(WorldError, match="cannot import"):
        load_gen_world("no_such_module_here:WORLD")
    with pytest.raises(WorldError):
        UserGenWorld(WorldSpec(apps=["kennel_app:Kennel"], state_model="kennel_app:Kennel"))


async def test_tasks_on_a_user_world_carry_its_world_section_and_pass_the_loader_and_audit(tmp_path) -> None:
    world = load_gen_world("tiny_world:FULL_WORLD")
    wanted = ["setting-bool", "setting-value", "create-record", "update-record", "multi-two", "mem-recall",
              "precond-create-first", "handoff-id", "cond-true"]
    gen = await generate_async(world, count=36, seed=2, prefix="kennel-", only=wanted)
    made = {t for t, n in gen.per_template.items() if n > 0}
    assert made == set(wanted), gen.per_template
    for task in gen.tasks:
        assert task["world"]["apps"] == tiny_world.FULL_WORLD["apps"]
        assert task["world"]["state_model"] == tiny_world.FULL_WORLD["state_model"]
        assert "initial_state" not in task  # a world without the sandbox starts from its own initial_state
        assert set(task["tools"]) <= {t.name for t in world.tools()}
    write_tasks(gen, tmp_path)
    shutil.copy(tiny_world.__file__, tmp_path / "tiny_world.py")  # a folder an app team hands over
    shutil.copy(tiny_world.TEAM_MODULE, tmp_path / tiny_world.TEAM_MODULE.name)
    loaded = load_suite(directory=tmp_path)  # the normal loader builds each task's own world
    assert sorted(t.id for t in loaded) == sorted(t["id"] for t in gen.tasks)
    for task in loaded[:6]:
        report = await audit_task(task)
        assert report.ok, report


async def test_validation_on_a_user_world_catches_a_task_that_measures_nothing() -> None:
    world = load_gen_world("tiny_world:WORLD")
    task = {
        "id": "kennel-heating", "goal": "Switch the kennel heating on.", "capability": "single_tool", "split": "dev",
        "tools": ["set_heating"], "world": tiny_world.WORLD, "domains": ["kennel"],
        "criteria": [{"kind": "state", "path": "heating", "equals": True}, {"kind": "unchanged", "allow": ["heating"]}],
        "oracle": [{"call": "set_heating", "args": {"on": True}}, {"finish": "On."}],
    }
    assert await validate_task(world, task) is None
    assert await validate_task(world, task | {"oracle": [{"call": "set_heating", "args": {"on": False}},
                                                         {"finish": "On."}]}) == "oracle_fails"
    assert await validate_task(world, task | {"criteria": [{"kind": "state", "path": "feeding", "equals": "morning"}]}) \
        == "vacuous"
    assert await validate_task(world, task | {"criteria": [{"kind": "unchanged", "allow": ["heating"]}]}) \
        == "do_nothing_passes"
