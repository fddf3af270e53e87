"""Tool exposure by retrieval (issue 35): few relevant tools per step, used ones kept, "more tools" widens.

A small declared world of its own (no sandbox words): retrieval ranks by the tools' declared
text, the harness shows what the exposure chose, the grammar allows exactly those names, and a
widened destructive tool still meets confirmation.
"""

from __future__ import annotations

from typing import Literal

import pytest

from pocketpilot.adapters.errors import EtaError
from pocketpilot.adapters.tool_retrieval import (
    MORE_TOOLS,
    ToolRetrievalSettings,
    ToolRetriever,
    more_tools_spec,
    tool_text,
)
from pocketpilot.contracts import ToolSpec
from pocketpilot.executor.tools import ToolRegistry, tool
from pocketpilot.harness import AllowAll, DenyAll, Session
from pocketpilot.harness.action_schema import action_json_schema
from pocketpilot.harness.base import ToolExposure
from pocketpilot.harness.planners import ScriptedPlanner


def _world() -> ToolRegistry:
    @tool(effect="create")
    def schedule_wakeup(time: str, label: str = "") -> dict:
        """Schedule a morning wake-up chime.

        Args:
            time: Clock time HH:MM.
            label: What the chime is for.
        """
        return {"id": "w1", "time": time}

    @tool(effect="read")
    def forecast(city: str) -> dict:
        """Tomorrow's weather forecast: rain, temperature and wind.

        Args:
            city: The city.
        """
        return {"city": city, "rain": True}

    @tool(effect="setting", setting="radio")
    def set_radio(mode: Literal["off", "airplane", "roaming"]) -> dict:
        """Switch the phone's radio mode.

        Args:
            mode: The radio mode.
        """
        return {"mode": mode}

    @tool(effect="read")
    def list_pictures(album: str = "all") -> list:
        """List the pictures of an album.

        Args:
            album: Album name.
        """
        return [{"id": "p1", "name": "beach.jpg"}]

    @tool(effect="delete", id_arg="picture_id")
    def erase_picture(picture_id: str) -> dict:
        """Erase a picture for good.

        Args:
            picture_id: The picture's id.
        """
        return {"erased": picture_id}

    @tool(effect="send", open_world=True)
    def text_friend(friend: str, words: str) -> dict:
        """Send a short text to a friend.

        Args:
            friend: Who gets it.
            words: The text.
        """
        return {"sent": True}

    @tool(effect="read")
    def song_queue() -> list:
        """Songs waiting to play next."""
        return []

    @tool(effect="update")
    def rename_recipe(recipe_id: str, title: str) -> dict:
        """Give a cooking recipe a new title.

        Args:
            recipe_id: The recipe.
            title: The new title.
        """
        return {"id": recipe_id, "title": title}

    return ToolRegistry([schedule_wakeup, forecast, set_radio, list_pictures, erase_picture, text_friend,
                         song_queue, rename_recipe])


def _retriever(k: int = 2, **kw) -> ToolRetriever:
    return ToolRetriever(ToolRetrievalSettings(k=k, hybrid=False, **kw))


def test_retrieval_ranks_the_tools_the_request_needs_first() -> None:
    specs = _world().tools()
    r = _retriever()
    assert r.rank(specs, "will it rain tomorrow in Oslo?")[0] == "forecast"
    assert r.rank(specs, "put the phone in airplane mode")[0] == "set_radio"  # an allowed value is text too
    assert r.rank(specs, "erase the beach picture")[:2] == ["erase_picture", "list_pictures"]


def test_each_clause_of_a_multi_part_request_gets_its_best_tool() -> None:
    specs = _world().tools()
    shown = _retriever(k=2).exposure(specs, "Check tomorrow's forecast, then text a friend about it.").expose("", [])
    assert set(shown) == {"forecast", "text_friend"}


def test_a_tool_that_takes_a_record_id_brings_the_read_that_finds_it() -> None:
    specs = _world().tools()
    with_lookup = _retriever(k=2).rank(specs, "erase it for good")
    assert with_lookup.index("list_pictures") == with_lookup.index("erase_picture") + 1
    plain = _retriever(k=2, lookups=False).rank(specs, "erase it for good")
    assert plain.index("list_pictures") > plain.index("erase_picture") + 1


def test_the_tool_text_reads_declarations_only() -> None:
    spec = next(s for s in _world().tools() if s.name == "set_radio")
    text = tool_text(spec, app="phone")
    for word in ("set radio", "Switch the phone's radio mode", "setting", "mode", "airplane", "roaming", "phone"):
        assert word in text


def test_the_steps_state_reranks_the_tools_only_with_a_state_weight() -> None:
    specs = _world().tools()
    state = '{"recipe_id": "r-4", "title": "Soup", "cooking": true}'
    weighted = _retriever(k=2, state_weight=0.5).exposure(specs, "will it rain tomorrow?")
    assert "rename_recipe" not in weighted.expose("", []) and "rename_recipe" in weighted.expose(state, [])
    fixed = _retriever(k=2, state_weight=0.0).exposure(specs, "will it rain tomorrow?")
    assert fixed.expose(state, []) == fixed.expose("", [])  # one list for the run: the prompt keeps its prefix


def test_used_tools_stay_and_the_set_keeps_the_session_order() -> None:
    specs = _world().tools()
    exposure = _retriever(k=1).exposure(specs, "will it rain tomorrow?")
    assert exposure.expose("", []) == ["forecast"]
    assert exposure.expose("", ["song_queue"]) == ["forecast", "song_queue"]
    assert exposure.expose("", ["nonexistent"]) == ["forecast"]


def test_more_tools_widens_with_the_planners_words() -> None:
    specs = _world().tools()
    exposure = _retriever(k=1, more_k=2).exposure(specs, "will it rain tomorrow?")
    added = exposure.widen("rename a cooking recipe", ["forecast"])
    assert added[0] == "rename_recipe" and "forecast" not in added and len(added) <= 2
    assert exposure.more_tools is not None and exposure.more_tools.read_only and not exposure.more_tools.destructive


def test_the_index_is_built_once_per_tool_set() -> None:
    specs = _world().tools()
    r = _retriever()
    first = r.index(specs)
    assert r.index(list(specs)) is first
    assert r.index(specs[:3]) is not first


def test_a_world_tool_named_like_the_widening_tool_is_refused() -> None:
    specs = [*_world().tools(), more_tools_spec().model_copy(update={"read_only": False, "effect": None})]
    with pytest.raises(EtaError, match=MORE_TOOLS):
        _retriever().exposure(specs, "anything")


def test_settings_refuse_a_k_below_one() -> None:
    with pytest.raises(ValueError):
        ToolRetrievalSettings(k=0)


def test_keyword_only_without_an_embedder() -> None:
    r = ToolRetriever(ToolRetrievalSettings(hybrid=True), embedder=None)
    assert r.mode == "keyword"
    assert r.rank(_world().tools(), "will it rain tomorrow?")[0] == "forecast"


# ---------------------------------------------------------------- in the harness


def test_the_retriever_is_a_harness_tool_exposure() -> None:
    assert isinstance(_retriever(), ToolExposure)


def _names(specs: list[ToolSpec]) -> list[str]:
    return [s.name for s in specs]


async def test_the_session_shows_the_retrieved_tools_and_the_grammar_allows_only_them() -> None:
    planner = ScriptedPlanner([
        {"kind": "tool_call", "calls": [{"name": "forecast", "arguments": {"city": "Oslo"}}]},
        {"kind": "finish", "summary": "rain"},
    ])
    session = Session(planner, _world(), confirm=AllowAll(), tool_exposure=_retriever(k=2))
    episode = await session.run("will it rain tomorrow in Oslo?")
    assert episode.stop_reason == "finish"
    first = planner.requests[0]
    shown = _names(first.tools)
    assert "forecast" in shown and MORE_TOOLS in shown and len(shown) == 3
    assert _names(episode.header.tools) == shown
    schema = action_json_schema(first.tools, first.kinds)
    text = str(schema)
    assert "'forecast'" in text and "'rename_recipe'" not in text and "'erase_picture'" not in text
    # the used tool stays shown on the next step
    assert "forecast" in _names(planner.requests[1].tools)


async def test_without_an_exposure_every_tool_is_shown_as_before() -> None:
    planner = ScriptedPlanner([{"kind": "finish", "summary": "ok"}])
    await Session(planner, _world(), confirm=AllowAll()).run("will it rain tomorrow?")
    assert _names(planner.requests[0].tools) == _names(_world().tools())


async def test_a_tool_not_shown_cannot_be_called() -> None:
    planner = ScriptedPlanner([
        {"kind": "tool_call", "calls": [{"name": "rename_recipe", "arguments": {"recipe_id": "r", "title": "t"}}]},
        {"kind": "finish", "summary": "ok"},
    ], validate=False)
    episode = await Session(planner, _world(), confirm=AllowAll(), tool_exposure=_retriever(k=1)).run(
        "will it rain tomorrow?")
    assert episode.steps[0].results[0].error.code == "unknown_tool"


async def test_more_tools_widens_the_next_step_and_is_answered_by_the_harness() -> None:
    planner = ScriptedPlanner([
        {"kind": "tool_call", "calls": [{"name": MORE_TOOLS, "arguments": {"query": "rename a cooking recipe"}}]},
        {"kind": "tool_call", "calls": [{"name": "rename_recipe", "arguments": {"recipe_id": "r1", "title": "Soup"}}]},
        {"kind": "finish", "summary": "renamed"},
    ])
    episode = await Session(planner, _world(), confirm=AllowAll(), tool_exposure=_retriever(k=1)).run(
        "will it rain tomorrow?")
    assert "rename_recipe" not in _names(planner.requests[0].tools)
    added = episode.steps[0].results[0]
    assert added.ok and "rename_recipe" in [t["name"] for t in added.data["added"]]
    assert "rename_recipe" in _names(planner.requests[1].tools)
    assert episode.steps[1].results[0].ok and episode.stop_reason == "finish"
    assert "rename_recipe" in _names(planner.requests[2].tools)  # widened tools stay


async def test_a_destructive_tool_reached_through_more_tools_still_needs_confirmation() -> None:
    planner = ScriptedPlanner([
        {"kind": "tool_call", "calls": [{"name": MORE_TOOLS, "arguments": {"query": "erase a picture"}}]},
        {"kind": "tool_call", "calls": [{"name": "erase_picture", "arguments": {"picture_id": "p1"}}]},
        {"kind": "finish", "summary": "erased"},
    ])
    erased: list[str] = []
    world = _world()
    original = world.call

    async def spy(call):
        erased.append(call.name)
        return await original(call)

    world.call = spy  # type: ignore[method-assign]
    episode = await Session(planner, world, confirm=DenyAll(), tool_exposure=_retriever(k=1)).run(
        "will it rain tomorrow?")
    assert "erase_picture" in _names(planner.requests[1].tools)
    result = episode.steps[1].results[0]
    assert not result.ok and "erase_picture" not in erased
    assert MORE_TOOLS not in erased  # the harness answers it; the executor never sees it


# ---------------------------------------------------------------- η and a task's run


def test_eta_switches_retrieval_on_and_leaves_its_version_alone_when_off() -> None:
    from pocketpilot.adapters import compile_eta, session_kwargs

    specs = _world().tools()
    eta = compile_eta(specs)
    on = eta.model_copy(update={"tool_retrieval": ToolRetrievalSettings(k=3)})
    assert "tool_retrieval" not in eta.content() and on.version != eta.version
    assert "tool_exposure" not in session_kwargs(eta, specs, request="will it rain?")
    exposure = session_kwargs(on, specs, request="will it rain?")["tool_exposure"]
    assert isinstance(exposure, ToolExposure)
    assert len(exposure.start(specs, "will it rain?", []).expose("", [])) == 3


async def test_a_whole_phone_task_runs_with_retrieved_tools() -> None:
    from pocketpilot.evaluation.compare import load_harness_kit, run_task
    from pocketpilot.evaluation.task_episode import RunSettings
    from pocketpilot.harness.context import render_tools
    from pocketpilot.tasks import load_suite, oracle_actions, prepare

    task = next(t for t in load_suite("dev") if t.id == "settings-wifi-off")
    every = prepare(task, exposure="phone").world.tool_names()
    assert len(every) > len(prepare(task).executor.tools())
    kit = load_harness_kit()
    planner = ScriptedPlanner(oracle_actions(task))
    _, outcome = await run_task(task, planner, kit=kit, settings=RunSettings(exposure="phone", tool_k=8))
    shown = _names(planner.requests[0].tools)
    assert outcome.success and MORE_TOOLS in shown and len(shown) <= 9  # K retrieved, the widening tool
    assert set(shown) - {MORE_TOOLS} <= set(every)

    # neither the caller nor η asks for retrieval: a list that fits the tools budget goes in whole ...
    planner = ScriptedPlanner(oracle_actions(task))
    _, outcome = await run_task(task, planner, kit=kit,
                                settings=RunSettings(exposure="phone", budget={"tools": 1_000_000}))
    assert outcome.success and set(_names(planner.requests[0].tools)) == set(every)
    # ... and one that outgrows it is retrieved (the default K), not a prompt that cannot fit
    planner = ScriptedPlanner(oracle_actions(task))
    whole = planner.count_tokens(render_tools(prepare(task, exposure="phone").executor.tools()))
    _, outcome = await run_task(task, planner, kit=kit,
                                settings=RunSettings(exposure="phone", budget={"tools": whole - 1}))
    shown = _names(planner.requests[0].tools)
    assert outcome.success and MORE_TOOLS in shown
    assert len(shown) <= ToolRetrievalSettings().k + 1 < len(every)
