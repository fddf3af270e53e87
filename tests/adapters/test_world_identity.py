"""The sandbox's skills, gates and η notes apply to the sandbox's tools, never to a namesake.

A team's world (a task folder with its own apps) has tools called ``start_cast``,
``get_cast_status``, ``stop_cast``, ``calculate``, ``convert_unit`` and even the sandbox's own
``convert_units``. None of them is the sandbox's tool: no bundled skill is preloaded, offered or
gating there, and no sandbox note is in the guidance. The same world whose app class declares
the sandbox's identity gets them all, and the sandbox keeps them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from pocketpilot.adapters import compile_eta, sandbox_tool_apps
from pocketpilot.adapters.notes import DEFAULT_NOTES, SANDBOX
from pocketpilot.contracts import ToolSpec
from pocketpilot.errors import WorldError
from pocketpilot.evaluation.task_episode import load_harness_kit, run_task_episode
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.executor.sandbox.phone import SANDBOX_WORLD
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.skills import SkillError, SkillLibrary
from pocketpilot.skills.worlds import ToolSet
from pocketpilot.tasks import load_task, prepare
from pocketpilot.tasks.world import ModelWorld

SANDBOX_NOTE_TEXTS = [n.text for n in DEFAULT_NOTES if n.world is not None]
"""Every η note written for the sandbox's tools (the "Use ids (note, alarm, event)" one included)."""

APP = '''
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from pocketpilot.executor.tools import tool


class CastState(BaseModel):
    casting: str | None = None


class TeamCast:
    """The team's own casting and conversion app: same names as some sandbox tools, other tools."""

    name = "teamcast"

    def __init__(self, state: CastState) -> None:
        self.state = state

    @tool(effect="read")
    def get_cast_status(self) -> dict[str, Any]:
        """Whether a cast is live, and where to."""
        return {"active": self.state.casting is not None, "target": self.state.casting}

    @tool(effect="update", idempotent=True)
    def start_cast(self, target: str) -> dict[str, Any]:
        """Cast to a display (the team's player takes over a live cast by itself)."""
        self.state.casting = target
        return {"target": target}

    @tool(effect="update", idempotent=True)
    def stop_cast(self) -> dict[str, Any]:
        """Stop casting."""
        self.state.casting = None
        return {"stopped": True}

    @tool(effect="read")
    def convert_unit(self, value: float, unit: str, to: str) -> dict[str, Any]:
        """Convert between the team's units."""
        return {"value": value * 1.609344, "unit": to}

    @tool(effect="read")
    def convert_units(self, value: float, from_unit: str, to_unit: str) -> dict[str, Any]:
        """The team's other converter, named like the sandbox's."""
        return {"value": value * 1.609344, "unit": to_unit}

    @tool(effect="read")
    def calculate(self, expression: str) -> dict[str, Any]:
        """Evaluate arithmetic."""
        return {"result": 0}


class DeclaredTeamCast(TeamCast):
    """The same app, declaring the sandbox's identity for its tools (the team asks for its skills)."""

    world = "sandbox"
'''

TASK = """
id: {id}
goal: {goal}
capability: multi_step
split: dev
world:
  apps: ["team34cast.app:{app}"]
  state_model: "team34cast.app:CastState"
criteria:
  - {{kind: state, path: casting, equals: Living room TV}}
  - {{kind: stop, reason: finish}}
oracle:
  - {{call: start_cast, args: {{target: Living room TV}}}}
  - {{finish: "Casting to the living room TV."}}
"""

CAST = "Cast my screen to the living room TV."
CONVERT = "Convert 5 miles to km, the units converter please."


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("team")
    package = root / "team34cast"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "app.py").write_text(textwrap.dedent(APP))
    for app, declared in (("TeamCast", ""), ("DeclaredTeamCast", "-declared")):
        for kind, goal in (("cast", CAST), ("convert", CONVERT)):
            (root / f"{kind}{declared}.yaml").write_text(TASK.format(id=f"team-{kind}{declared}", goal=goal, app=app))
    return root


@pytest.fixture(scope="module")
def kit() -> Any:
    return load_harness_kit()


def _routed(kit: Any, tools: list[ToolSpec], request: str) -> dict[str, Any]:
    kw = kit.session_kwargs(tools, request=request)
    names = [t.name for t in tools]
    return {
        "preloaded": kw["preloaded"],
        "gates": sorted({g.skill for g in kw["gates"]}),
        "loadable": kw["skills"].available(names),  # what the session's store offers, asked by name
        "guidance": "\n".join(kw["guidance_for"](names)),
    }


def _team_tools(folder: Path, name: str) -> list[ToolSpec]:
    run = prepare(load_task(folder / name))
    try:
        return run.executor.tools()
    finally:
        run.close()


@pytest.mark.parametrize("request_text", [CAST, CONVERT])
def test_a_foreign_world_gets_no_sandbox_skill_gate_or_note(folder: Path, kit: Any, request_text: str) -> None:
    tools = _team_tools(folder, "cast.yaml")
    assert {"start_cast", "convert_unit", "convert_units", "calculate"} <= {t.name for t in tools}
    assert all(t.world is None for t in tools)
    routed = _routed(kit, tools, request_text)
    assert routed["preloaded"] == [] and routed["gates"] == [] and routed["loadable"] == []
    assert not [text for text in SANDBOX_NOTE_TEXTS if text in routed["guidance"]]
    assert "load_skill" not in routed["guidance"]  # no skill speaks about these tools: no index, no note


@pytest.mark.parametrize("request_text,skill", [(CAST, "screen-cast"), (CONVERT, "unit-conversion")])
def test_the_same_tools_declaring_the_sandbox_identity_get_its_skills(folder: Path, kit: Any, request_text: str,
                                                                     skill: str) -> None:
    tools = _team_tools(folder, "cast-declared.yaml")
    assert {t.world for t in tools} == {SANDBOX_WORLD}
    routed = _routed(kit, tools, request_text)
    assert skill in routed["preloaded"] and skill in routed["loadable"]
    if skill == "screen-cast":
        assert "screen-cast" in routed["gates"]
    assert "Use ids (note, alarm, event)" in routed["guidance"]


@pytest.mark.parametrize("request_text,skill", [(CAST, "screen-cast"), (CONVERT, "unit-conversion")])
def test_the_sandbox_keeps_its_skills_gates_and_notes(kit: Any, request_text: str, skill: str) -> None:
    tools = SandboxExecutor(SandboxPhone(), ["cast", "converter", "calculator"]).tools()
    assert {t.world for t in tools} == {SANDBOX_WORLD}
    routed = _routed(kit, tools, request_text)
    assert skill in routed["preloaded"] and skill in routed["loadable"]
    assert "Use ids (note, alarm, event)" in routed["guidance"]
    assert "screen-cast" in routed["gates"]  # gates attach to tools, whatever the request


async def test_a_foreign_start_cast_runs_ungated_and_unguided(folder: Path, kit: Any) -> None:
    """End to end, as ``run --task`` and ``bench --tasks`` run it: the team's start_cast runs at once."""
    task = load_task(folder / "cast.yaml")
    planner = ScriptedPlanner([
        {"kind": "tool_call", "calls": [{"name": "start_cast", "arguments": {"target": "Living room TV"}}]},
        {"kind": "finish", "summary": "Casting to the living room TV."},
    ])
    episode, _ = await run_task_episode(task, planner, kit=kit)
    assert episode.header.skills == []
    assert [r.ok for s in episode.steps for r in s.results] == [True]
    assert episode.verdict is not None and episode.verdict.success
    prompt = planner.requests[0].messages[0].content
    assert not [text for text in SANDBOX_NOTE_TEXTS if text in prompt] and "screen-cast" not in prompt
    assert kit.violations(episode) == 0


async def test_a_planner_cannot_load_a_sandbox_skill_onto_a_foreign_world(folder: Path, kit: Any) -> None:
    """Asked for by name anyway, the skill is not loadable there: its gates never come into force."""
    task = load_task(folder / "cast.yaml")
    planner = ScriptedPlanner([
        {"kind": "load_skill", "name": "screen-cast"},
        {"kind": "tool_call", "calls": [{"name": "start_cast", "arguments": {"target": "Living room TV"}}]},
        {"kind": "finish", "summary": "Casting to the living room TV."},
    ], validate=False)
    episode, _ = await run_task_episode(task, planner, kit=kit)
    load, cast = episode.steps[0].results[0], episode.steps[1].results[0]
    assert not load.ok and load.error is not None and load.error.code == "unknown_skill"
    assert cast.ok and episode.verdict is not None and episode.verdict.success


async def test_a_declared_start_cast_is_held_by_the_sandbox_gate(folder: Path, kit: Any) -> None:
    """The control: the gate is real, and holds a tool that declares the sandbox's identity."""
    task = load_task(folder / "cast-declared.yaml")
    planner = ScriptedPlanner([
        {"kind": "tool_call", "calls": [{"name": "start_cast", "arguments": {"target": "Living room TV"}}]},
        {"kind": "finish", "summary": "Casting to the living room TV."},
    ])
    episode, _ = await run_task_episode(task, planner, kit=kit)
    assert "screen-cast" in episode.header.skills
    first = episode.steps[0].results[0]
    assert not first.ok and first.error is not None and first.error.code == "precondition_failed"


def test_a_namesake_beside_the_sandbox_attaches_nothing() -> None:
    """One session, the sandbox's tools and another world's ``calculate``: the unit skill needs the sandbox's."""
    lib = SkillLibrary.builtin()
    sandbox = SandboxExecutor(SandboxPhone(), ["cast", "converter"]).tools()
    foreign = ToolSpec(name="calculate", description="the team's calculator", effect="read")
    tools = [*sandbox, foreign]
    available = lib.available(tools)
    assert "screen-cast" in available and "unit-conversion" not in available
    assert lib.governing(foreign) == [] and "unit-conversion" in lib.governing("calculate")
    declared = foreign.model_copy(update={"world": SANDBOX_WORLD})
    assert "unit-conversion" in lib.available([*sandbox, declared])


def test_a_bound_library_answers_names_by_the_worlds_it_was_given() -> None:
    lib = SkillLibrary.builtin()
    foreign = [ToolSpec(name=n, effect="read") for n in ("start_cast", "get_cast_status", "stop_cast")]
    bound = lib.bind(foreign)
    names = [t.name for t in foreign]
    assert bound.available(names) == [] and bound.always_on_gates(names) == []
    sandbox = lib.bind(SandboxExecutor(SandboxPhone(), ["cast"]).tools())
    assert "screen-cast" in sandbox.available(names)
    assert {g.skill for g in sandbox.always_on_gates(names)} >= {"screen-cast"}
    assert bound.available(["not_a_tool_of_the_session"]) == []  # outside the catalogue: nobody's tool


def test_eta_compiled_for_a_foreign_world_keeps_no_sandbox_skill_or_note() -> None:
    lib = SkillLibrary.builtin()
    foreign = [ToolSpec(name=n, effect="read") for n in ("start_cast", "get_cast_status", "stop_cast", "calculate",
                                                          "convert_units")]
    eta = compile_eta(foreign, lib)
    assert eta.skills == {}
    assert not [n.id for n in eta.notes if n.world is not None]
    assert all(entry.skills == [] and entry.world is None for entry in eta.tools.values())
    assert {"ids.from-results", "cast.one-at-a-time", "converter.calculator-fallback"} <= set(eta.dropped["notes"])
    assert "world" not in eta.content()["tools"]["start_cast"]  # undeclared: stored as before worlds existed
    with pytest.raises(SkillError, match="world"):
        compile_eta(foreign + [ToolSpec(name=t.name) for t in sandbox_tool_apps()[0]
                               if t.name not in {s.name for s in foreign}], lib, strict=True)


def test_the_bundled_kit_declares_the_sandbox_world() -> None:
    lib = SkillLibrary.builtin()
    assert SANDBOX == SANDBOX_WORLD
    assert {s.world for s in lib.skills()} == {SANDBOX_WORLD}
    assert all(n.world == SANDBOX for n in DEFAULT_NOTES if n.requires_tools)
    assert {t.world for t in SandboxPhone().registry().tools()} == {SANDBOX_WORLD}
    tools, apps = sandbox_tool_apps()
    eta = compile_eta(tools, lib, apps=apps, strict=True)
    assert eta.dropped == {} and {e.world for e in eta.tools.values()} == {SANDBOX_WORLD}
    assert {e.world for e in eta.skills.values()} == {SANDBOX_WORLD}


def test_tool_sets_match_by_world_and_take_bare_names_on_the_callers_word() -> None:
    specs = ToolSet.of([ToolSpec(name="a", world="sandbox"), ToolSpec(name="b")])
    assert specs.of_world("sandbox") == {"a"} and specs.of_world(None) == {"b"}
    assert specs.admits("sandbox", ["a"]) and not specs.admits("sandbox", ["a", "b"])
    assert not ToolSet.of([ToolSpec(name="b")]).admits("sandbox", [])  # no tool of its world: nothing to say
    bare = ToolSet.of(["a", "b"])
    assert bare.admits("sandbox", ["a", "b"]) and bare.of_world("sandbox") == {"a", "b"}
    resolved = ToolSet.of(["a", "b", "c"], catalogue=specs)
    assert resolved.declared == {"a": "sandbox", "b": None, "c": None}


def test_an_app_class_declaring_a_bad_world_is_refused() -> None:
    from pocketpilot.executor.tools import tool

    class Bad:
        world = "Not A World!"

        def __init__(self, state: Any) -> None:
            pass

        @tool(effect="read")
        def ping(self) -> str:
            """Ping."""
            return "pong"

    with pytest.raises(WorldError, match="declares world"):
        ModelWorld(None, [Bad])


def test_a_revised_note_is_about_the_world_of_the_tools_it_names() -> None:
    from pocketpilot.adapters import AddNote, MapTool, Revision, RevisionError, RoutingNote, apply_revision

    tools, apps = sandbox_tool_apps()
    foreign = ToolSpec(name="team_ping", description="the team's own", effect="read")
    eta = compile_eta([*tools, foreign], SkillLibrary.builtin(), apps=apps)

    def revise(*ops: Any) -> Any:
        return apply_revision(eta, Revision(id="r", base_version=eta.version, rationale="x", ops=list(ops)))

    added = revise(AddNote(note=RoutingNote(id="cast.wait", text="Wait for stop_cast.", requires_tools=["stop_cast"])))
    assert added.note("cast.wait").world == SANDBOX_WORLD  # diagnosis wrote it against the sandbox's stop_cast
    with pytest.raises(RevisionError, match="another world"):
        revise(AddNote(note=RoutingNote(id="x", text="t", requires_tools=["stop_cast"], world="team")))
    with pytest.raises(RevisionError, match="is for world sandbox"):
        revise(MapTool(tool="team_ping", skill="screen-cast"))
    assert revise(AddNote(note=RoutingNote(id="ping", text="t", requires_tools=["team_ping"]))).note("ping").world is None


def test_a_bfcl_turn_gets_no_sandbox_note(kit: Any) -> None:
    """BFCL's classes have a cancel_order and a place_order of their own: its harness turns get no sandbox note."""
    from pocketpilot.suites import BfclSuite, SuiteUnavailableError
    from pocketpilot.suites.bfcl import BfclWorld
    from pocketpilot.suites.bfcl_run import _turn_session

    try:
        suite = BfclSuite.fetch()
    except SuiteUnavailableError as exc:
        pytest.skip(f"bfcl-eval wheel unavailable: {exc}")
    task = next(t for t in suite.tasks if {"cancel_order", "place_order"} & set(BfclWorld(suite, t).registry.names()))
    world = BfclWorld(suite, task)
    session = _turn_session(ScriptedPlanner([]), world, "Cancel my last order.", [], mode="harness", kit=kit)
    assert session.guidance_for is not None
    guidance = "\n".join(session.guidance_for(world.registry.names()))
    assert not [text for text in SANDBOX_NOTE_TEXTS if text in guidance] and "load_skill" not in guidance
    assert session.gates == [] and session.preloaded == []


def test_a_namesake_drops_the_gates_that_speak_of_it_and_keeps_the_others() -> None:
    """The sandbox's earbuds beside a team's start_cast: the arbiter's earbuds gate holds, its cast gate does not.

    Its procedure (which speaks of casting) is not offered: a namesake of a tool it names is there.
    """
    lib = SkillLibrary.builtin()
    sandbox = SandboxExecutor(SandboxPhone(), ["earbuds", "settings", "power"]).tools()
    team = [ToolSpec(name=n, effect="update") for n in ("start_cast", "stop_cast")]
    gates = lib.always_on_gates([*sandbox, *team])
    arbiter = [g for g in gates if g.skill == "conflict-arbiter"]
    assert arbiter and all("start_cast" not in g.tools for g in arbiter)
    assert any("connect_earbuds" in g.tools for g in arbiter)
    assert "conflict-arbiter" not in lib.available([*sandbox, *team])
    assert "conflict-arbiter" in lib.available(sandbox)
    assert any("start_cast" in g.tools for g in lib.always_on_gates(
        [*sandbox, *SandboxExecutor(SandboxPhone(), ["cast"]).tools()]) if g.skill == "conflict-arbiter")
