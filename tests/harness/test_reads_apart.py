"""Reads and changes in separate batches: the grammar's batch groups, and the hold for planners without one."""

from __future__ import annotations

import json

import jsonschema
import pytest

from pocketpilot.contracts import ToolSpec
from pocketpilot.executor.sandbox import EVERYDAY_APPS, SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, Session, default_policies, safety_policies
from pocketpilot.harness.action_schema import action_json_schema
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.policies import ReadsApart, batch_groups

FINISH = {"kind": "finish", "summary": "done"}


def _spec(name: str, **semantics: object) -> ToolSpec:
    return ToolSpec(name=name, description="", parameters={"type": "object", "properties": {}}, **semantics)


def _batch(*names: str) -> dict:
    return {"kind": "tool_call", "calls": [{"name": n, "arguments": {}} for n in names]}


def test_a_schema_with_batch_groups_admits_one_group_per_batch():
    tools = [_spec("look", effect="read"), _spec("peek", read_only=True), _spec("flip", effect="setting"),
             _spec("tap")]
    schema = action_json_schema(tools, ("tool_call", "finish"), (), [["look", "peek"], ["flip", "tap"]])
    ok = [_batch("look", "peek"), _batch("flip", "tap"), _batch("tap"), FINISH]
    for action in ok:
        jsonschema.validate(action, schema)
    for action in (_batch("look", "flip"), _batch("tap", "peek")):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(action, schema)
    # without groups (or with one), any mix is admitted, as before
    for groups in ((), [["look", "peek", "flip", "tap"]]):
        jsonschema.validate(_batch("look", "flip"), action_json_schema(tools, ("tool_call",), (), groups))


def test_the_groups_follow_the_declarations_not_the_names():
    """The read group is what declares read_only; a renamed tool keeps its group, an undeclared one is a change."""
    class View:
        tools = {t.name: t for t in (_spec("set_up_view", effect="read"), _spec("get_going", effect="update"),
                                     _spec("t03"))}

    assert ReadsApart().batch_groups(View()) == [["set_up_view"], ["get_going", "t03"]]
    View.tools = {"a": _spec("a", effect="read")}
    assert ReadsApart().batch_groups(View()) == []
    assert batch_groups(safety_policies(), View()) == []


async def test_the_planner_is_offered_the_groups_and_a_mixed_batch_runs_only_its_reads():
    phone = SandboxPhone()
    executor = SandboxExecutor(phone, list(EVERYDAY_APPS))
    read, change = {"name": "get_settings", "arguments": {}}, {"name": "set_wifi", "arguments": {"enabled": False}}
    planner = ScriptedPlanner([{"kind": "tool_call", "calls": [read, change]},
                               {"kind": "tool_call", "calls": [change]}, FINISH])
    before = phone.state.settings.wifi
    episode = await Session(planner, executor, confirm=AllowAll(), policies=[ReadsApart(), *default_policies()]).run(
        "wifi off")
    groups = planner.requests[0].batch_groups
    specs = {t.name: t for t in planner.requests[0].tools}
    assert len(groups) == 2 and {n for g in groups for n in g} == set(specs)
    assert all(specs[n].read_only for n in groups[0]) and not any(specs[n].read_only for n in groups[1])
    first = episode.steps[0]
    assert [r.ok for r in first.results] == [True, False]
    assert first.results[1].error.code == "not_allowed" and "get_settings" in first.results[1].error.message
    assert first.results[0].data["wifi"] == before  # the read saw the state before any change
    assert episode.steps[1].results[0].ok and phone.state.settings.wifi is False


async def test_bare_mode_keeps_mixed_batches_and_offers_no_groups():
    phone = SandboxPhone()
    planner = ScriptedPlanner([{"kind": "tool_call", "calls": [
        {"name": "get_settings", "arguments": {}}, {"name": "set_wifi", "arguments": {"enabled": False}}]}, FINISH])
    episode = await Session(planner, SandboxExecutor(phone, list(EVERYDAY_APPS)), confirm=AllowAll(),
                            policies=safety_policies()).run("wifi off")
    assert planner.requests[0].batch_groups == []
    assert [r.ok for r in episode.steps[0].results] == [True, True]
    assert json.loads(episode.header.model_dump_json())["policies"] == [
        {"name": p.name, "params": p.params()} for p in safety_policies()]


def test_groups_of_two_policies_that_shape_batches_intersect():
    class ByApp(ReadsApart):
        name = "by_app"

        def batch_groups(self, run):
            return [["look", "flip"], ["peek", "tap"]]

    class View:
        tools = {t.name: t for t in (_spec("look", effect="read"), _spec("peek", read_only=True),
                                     _spec("flip", effect="setting"), _spec("tap"))}

    assert batch_groups([ReadsApart(), ByApp()], View()) == [["look"], ["peek"], ["flip"], ["tap"]]
    assert batch_groups([ByApp()], View()) == [["look", "flip"], ["peek", "tap"]]
