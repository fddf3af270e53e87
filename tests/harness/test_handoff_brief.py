"""The harness briefs a sub-agent (η's ``delegation`` section): tools, request, guidance, grounded and carried artifacts.

The parent replays the kind of first delegate the 1.5B planner wrote on the dev hand-off tasks:
a tool of the right app but not the lookup the child needs, a record's name where its id
belongs, a number the request never said. A competent scripted child then looks the place up,
reads the directions and finishes. Each switch has a check its absence fails.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from scripted_actions import call, delegate, finish

from pocketpilot.adapters import compile_eta, sandbox_tool_apps, session_kwargs
from pocketpilot.adapters.delegation import DelegationSettings
from pocketpilot.adapters.eta import Eta
from pocketpilot.contracts import Delegate, Episode, ToolSpec
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, Session
from pocketpilot.harness.base import PlanRequest
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.skills import SkillLibrary

REQUEST = "Have a helper find out how far Corner Bean Cafe is from here, then tell me."
PLACE = "place-1"  # the sandbox phone's Corner Bean Cafe


@pytest.fixture(scope="module")
def library() -> SkillLibrary:
    return SkillLibrary.builtin()


@pytest.fixture(scope="module")
def eta(library: SkillLibrary) -> Eta:
    tools, apps = sandbox_tool_apps()
    return compile_eta(tools, library, apps=apps, strict=True)


def run(eta: Eta, library: SkillLibrary, script: list[Any], settings: DelegationSettings | None,
        request: str = REQUEST, apps: tuple[str, ...] = ("maps", "messages")) -> tuple[Episode, ScriptedPlanner]:
    phone = SandboxPhone()
    executor = SandboxExecutor(phone)
    names = [n for app in apps for n in eta.app_tools(app)]
    specs = [t for t in executor.tools() if t.name in names]
    kw = session_kwargs(eta.model_copy(update={"delegation": settings}), specs, library=library, delegate=True,
                        request=request)
    planner = ScriptedPlanner(script)
    session = Session(planner, executor, tools=names, confirm=AllowAll(), **kw)
    return asyncio.run(session.run(request)), planner


def child_requests(planner: ScriptedPlanner) -> list[PlanRequest]:
    return [r for r in planner.requests if "delegate" not in r.kinds]


RECORDED = delegate("Get the distance to Corner Bean Cafe", ["get_directions", "start_navigation"],
                    {"place_id": "Corner Bean Cafe", "days": "7", "destination": "Corner Bean Cafe"})
"""The recorded first delegate: the lookup missing, a name as the id, a number the request never said."""
CHILD = [call("search_places", query="Corner Bean Cafe"), call("get_directions", place_id=PLACE),
         finish("Corner Bean Cafe is 0.19 km away")]


def checks(episode: Episode, planner: ScriptedPlanner) -> dict[str, bool]:
    """One check per switch, on the child's first planner request and the parent's delegate step."""
    first = child_requests(planner)[0]
    text = "\n".join(m.content for m in first.messages)
    step = episode.steps[0]
    return {
        "show_request": REQUEST in text,
        "app_tools": "search_places" in {t.name for t in first.tools},
        "guidance": "Search for the place first" in first.messages[0].content,
        "grounded_artifacts": "place_id: Corner Bean Cafe" not in text and '"place_id"' not in text
        and "days" not in text and any(n.code == "artifacts_ungrounded" for n in step.notices),
    }


def test_the_brief_equips_a_child_the_recorded_delegate_left_without_its_lookup(eta, library):
    episode, planner = run(eta, library, [RECORDED, *CHILD, finish("0.19 km")], DelegationSettings.all_on())
    assert checks(episode, planner) == dict.fromkeys(["show_request", "app_tools", "guidance", "grounded_artifacts"],
                                                     True)
    child = episode.steps[0].children[0]
    assert [c.name for _, c, r in child.tool_calls() if r is not None and r.ok] == ["search_places", "get_directions"]
    assert episode.steps[0].results[0].ok and episode.steps[0].results[0].data["confirmed"] is True
    # the request value the request grounds is kept, in its own labelled block after "your part"
    message = child.header.request
    assert message.index(REQUEST) < message.index("Get the distance") < message.index("destination: Corner Bean Cafe")
    assert "Artifacts: {" not in message
    # the step records the delegate as briefed: the app's tools, the grounded artifacts only
    executed = episode.steps[0].action
    assert isinstance(executed, Delegate)
    assert executed.artifacts == {"destination": "Corner Bean Cafe"}
    assert executed.tools[:2] == ["get_directions", "start_navigation"]
    assert set(executed.tools) <= set(eta.app_tools("maps")) and "search_places" in executed.tools
    # only tools of the listed tools' app: the parent's messaging tools stay with the parent
    assert not set(executed.tools) & set(eta.app_tools("messages"))


@pytest.mark.parametrize("switch", ["show_request", "app_tools", "guidance", "grounded_artifacts"])
def test_each_switch_off_fails_its_check(eta, library, switch):
    off = {switch: False, **({"app_lookups": False} if switch == "app_tools" else {})}  # lookups alone close too
    settings = DelegationSettings.all_on().model_copy(update=off)
    episode, planner = run(eta, library, [RECORDED, *CHILD, finish("0.19 km"), finish(), finish()], settings)
    assert checks(episode, planner)[switch] is False


def test_app_lookups_adds_the_apps_read_only_tools_and_none_of_its_other_changes(eta, library):
    settings = DelegationSettings(app_lookups=True)
    episode, planner = run(eta, library, [RECORDED, *CHILD, finish("0.19 km")], settings)
    given = {t.name for t in child_requests(planner)[0].tools}
    specs = {t.name: t for t in SandboxExecutor(SandboxPhone()).tools()}
    added = given - set(RECORDED["tools"])
    assert "search_places" in added and all(specs[n].read_only for n in added)
    # the app's other changes stay out: only what the planner listed changes state
    writes = {n for n in eta.app_tools("maps") if not specs[n].read_only} - set(RECORDED["tools"])
    assert writes and not writes & given
    assert episode.steps[0].results[0].data["confirmed"] is True


def test_without_the_section_the_child_gets_the_delegate_as_written(eta, library):
    episode, planner = run(eta, library, [RECORDED, *CHILD, finish(), finish(), finish()], None)
    first = child_requests(planner)[0]
    assert {t.name for t in first.tools} == {"get_directions", "start_navigation"}
    child = episode.steps[0].children[0]
    assert child.header.request.startswith("Get the distance to Corner Bean Cafe\nArtifacts: {")
    assert episode.steps[0].action == Delegate.model_validate(RECORDED)
    assert not any(n.code.startswith("artifacts_") for n in episode.steps[0].notices)
    assert "Search for the place first" not in first.messages[0].content


def test_an_id_a_result_returned_is_grounded(eta, library):
    """The parent looked the place up itself: the id is in a result, so the hand-off keeps it."""
    script = [call("search_places", query="Corner Bean Cafe"),
              delegate("Get the distance", ["get_directions"], {"place_id": PLACE}),
              call("get_directions", place_id=PLACE), finish("0.19 km"), finish("0.19 km")]
    episode, planner = run(eta, library, script, DelegationSettings.all_on())
    step = episode.steps[1]
    assert isinstance(step.action, Delegate) and step.action.artifacts == {"place_id": PLACE}
    assert not any(n.code == "artifacts_ungrounded" for n in step.notices)
    assert f"place_id: {PLACE}" in step.children[0].header.request


NOTE_REQUEST = "Have a helper save a note titled Parking saying level 3, then have another helper read it back."


@pytest.mark.parametrize("carry", [True, False])
def test_ids_a_confirmed_child_surfaced_are_carried_into_the_next_delegation(eta, library, carry):
    script = [delegate("Save a note titled Parking saying level 3", ["create_note"]),
              call("create_note", title="Parking", body="level 3"), finish("saved"),
              delegate("Read the note back", ["read_note"]),
              finish("nothing to read"), finish("done")]
    settings = DelegationSettings.all_on().model_copy(update={"carry_ids": carry})
    episode, planner = run(eta, library, script, settings, request=NOTE_REQUEST, apps=("notes",))
    note_id = episode.steps[0].results[0].data["artifacts"]["create_note.id"]
    second = episode.steps[1]
    assert isinstance(second.action, Delegate)
    assert (second.action.artifacts == {"create_note.id": note_id}) is carry
    assert (note_id in second.children[0].header.request) is carry
    assert any(n.code == "artifacts_carried" for n in second.notices) is carry


def test_a_value_a_child_tool_declares_for_that_argument_is_grounded(eta, library):
    """``mode: walk`` is one of get_directions' declared modes; ``mode: teleport`` and ``speed`` are not grounded."""
    script = [delegate("Get the walking distance", ["get_directions"], {"mode": "walk", "speed": "5"}),
              finish("no"), finish("no"), finish("no")]
    episode, _ = run(eta, library, script, DelegationSettings.all_on())
    step = episode.steps[0]
    assert isinstance(step.action, Delegate) and step.action.artifacts == {"mode": "walk"}
    script[0] = delegate("Get the distance", ["get_directions"], {"mode": "teleport"})
    episode, _ = run(eta, library, script, DelegationSettings.all_on())
    assert episode.steps[0].action.artifacts == {}


def test_the_app_closure_keeps_the_lookups_where_the_bound_cuts_it():
    from pocketpilot.harness.brief import MAX_TOOLS, _app_closure

    def spec(name: str, read_only: bool) -> ToolSpec:
        return ToolSpec(name=name, read_only=read_only)

    held = {f"change_{i}": spec(f"change_{i}", False) for i in range(MAX_TOOLS)} | {"lookup": spec("lookup", True)}
    apps = dict.fromkeys(held, "app")
    got = _app_closure(["change_0"], held, apps)
    assert len(got) == MAX_TOOLS and got[:2] == ["change_0", "lookup"]
    assert _app_closure(["change_0"], held, {}) == ["change_0"]  # no declared app: nothing added


def test_app_lookups_off_hashes_as_before_the_switch_existed():
    before = Eta(delegation=DelegationSettings(app_tools=True))
    assert "app_lookups" not in before.content()["delegation"]
    on = Eta(delegation=DelegationSettings(app_tools=True, app_lookups=True))
    assert on.content()["delegation"]["app_lookups"] is True and on.version != before.version
