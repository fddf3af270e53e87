"""Tool text from errors for a tool that takes an id: where the id comes from, read off the runs (issue 36).

Under constrained decoding every argument error is ``not_found``: a name, a placeholder or an
invented id where a record's id belongs. No schema lists allowed ids, and often no verified
success called the tool. A call of it that worked in any run, a failed one included, shows
where the id comes from: the text gets that call, the id a slot naming the tool whose result
carried it. Real sessions with the scripted planner on a small tool set that declares its ids.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scripted_actions import call

from pocketpilot.adapters import Eta, ToolEntry
from pocketpilot.contracts import CriterionResult, Episode, ToolSpec, Verdict
from pocketpilot.errors import ToolFailure
from pocketpilot.evaluation.evolve import CandidateProposer
from pocketpilot.executor.tools import ToolRegistry, tool
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.trainer_bridge.candidates import apply_candidate, tool_text_candidates
from pocketpilot.trainer_bridge.diagnosis import diagnose
from pocketpilot.trainer_bridge.distil import distil
from pocketpilot.trainer_bridge.id_sources import id_sources

PARCELS = [{"id": "p-41", "name": "Running shoes"}, {"id": "p-77", "name": "Lamp"}]
FAILED = Verdict(success=False, criteria=[CriterionResult(name="tracked", passed=False, kind="state")])
PASSED = Verdict(success=True, criteria=[CriterionResult(name="tracked", passed=True, kind="state")])
FINISH = {"kind": "finish", "summary": "done"}


def registry(*, id_field: str | None = "id") -> ToolRegistry:
    ids = {p["id"] for p in PARCELS}

    @tool(effect="read", id_field=id_field, name_fields=["name"])
    def find_parcels(query: str) -> list:
        """Find parcels by words of their contents.

        Args:
            query: Words of what is in it.
        """
        return [dict(p) for p in PARCELS]

    @tool(effect="read", id_arg="parcel_id")
    def track_parcel(parcel_id: str) -> dict:
        """Read where a parcel is.

        Args:
            parcel_id: The parcel's id.
        """
        if parcel_id not in ids:
            raise ToolFailure("not_found", f"no parcel {parcel_id!r}")
        return {"where": "depot"}

    @tool(effect="update", id_arg="parcel_id")
    def hold_parcel(parcel_id: str, hold: bool = True) -> dict:
        """Hold a parcel at the depot.

        Args:
            parcel_id: The parcel's id.
            hold: False releases it.
        """
        if parcel_id not in ids:
            raise ToolFailure("not_found", f"no parcel {parcel_id!r}")
        return {"held": hold}

    return ToolRegistry([find_parcels, track_parcel, hold_parcel])


def specs(reg: ToolRegistry) -> list[ToolSpec]:
    return [reg[n].spec for n in ("find_parcels", "track_parcel", "hold_parcel")]


def eta_for(reg: ToolRegistry) -> Eta:
    return Eta(tools={s.name: ToolEntry(description=s.description, parameters=s.parameters,
                                        semantics=s.semantics(), world=s.world) for s in specs(reg)})


def run(reg: ToolRegistry, actions: list[dict[str, Any]], request: str, verdict: Verdict = FAILED) -> Episode:
    planner = ScriptedPlanner([*actions, FINISH])
    episode = asyncio.run(Session(planner, reg, confirm=AllowAll(), config=HarnessConfig()).run(request))
    return episode.model_copy(update={"verdict": verdict})


def ungrounded(reg: ToolRegistry) -> list[Episode]:
    """Two failed runs with not_found on track_parcel: a name, then a placeholder."""
    return [run(reg, [call("track_parcel", parcel_id="shoes")], "Where are my shoes?"),
            run(reg, [call("find_parcels", query="lamp"), call("track_parcel", parcel_id="<parcel_id>")],
                "Where is the lamp?")]


def texts(failed: list[Episode], eta: Eta, **kwargs: Any) -> dict[str, str]:
    diagnoses = [diagnose(e, known_tools=list(eta.tools)) for e in failed]
    out = {}
    for c in tool_text_candidates(diagnoses, eta, **kwargs):
        out[c.target] = apply_candidate(eta, c).tools[c.target].revised_description
    return out


def test_a_working_call_in_a_failed_run_gives_an_example_with_the_id_slotted_from_its_source() -> None:
    reg = registry()
    eta = eta_for(reg)
    worked = run(reg, [call("find_parcels", query="shoes"), call("track_parcel", parcel_id="p-41"),
                       call("hold_parcel", parcel_id="p-99")], "Track and hold my shoes")  # fails: not held
    episodes = [*ungrounded(reg), worked]
    assert texts(episodes, eta) == {}  # no schema values, no success: nothing to say without the runs
    text = texts(episodes, eta, episodes=episodes)["track_parcel"]
    assert "Example: track_parcel(parcel_id=<parcel_id from find_parcels's result>)" in text
    assert "p-41" not in text and "shoes" not in text  # never a value of the run


def test_the_evolve_proposer_reads_the_failed_runs() -> None:
    reg = registry()
    eta = eta_for(reg)
    worked = run(reg, [call("find_parcels", query="lamp"), call("track_parcel", parcel_id="p-77"),
                       call("hold_parcel", parcel_id="lamp")], "Track and hold the lamp")
    candidates, _ = CandidateProposer().propose([*ungrounded(reg), worked], eta, [])
    [tool_text] = [c for c in candidates if c.kind == "tool_text"]
    assert tool_text.revision.ops[0].tool == "track_parcel"
    assert "<parcel_id from find_parcels's result>" in tool_text.revision.ops[0].description


def test_without_a_working_call_the_text_names_the_results_that_carry_the_id() -> None:
    reg = registry()
    eta = eta_for(reg)
    held = run(reg, [call("find_parcels", query="shoes"), call("hold_parcel", parcel_id="p-41", hold=True)],
               "Hold my shoes and tell me where they are")  # track_parcel never called: failed
    episodes = [*ungrounded(reg), held]
    text = texts(episodes, eta, episodes=episodes)["track_parcel"]
    assert "Its parcel_id is an id from the result of find_parcels" in text
    assert "Example" not in text and "p-41" not in text
    # the held call is hold_parcel's own example, its declared boolean literal, its id a slot
    assert id_sources(episodes).example("hold_parcel") == (
        "hold_parcel(parcel_id=<parcel_id from find_parcels's result>, hold=true)")


def in_world(episode: Episode, world: str) -> Episode:
    """The run with every tool it lists declaring ``world`` (as a world's builder declares its tools')."""
    tools = [t.model_copy(update={"world": world}) for t in episode.header.tools]
    return episode.model_copy(update={"header": episode.header.model_copy(update={"tools": tools})})


def test_a_tool_of_another_world_with_the_same_id_argument_says_nothing() -> None:
    reg = registry()
    ours = Eta(tools={n: e.model_copy(update={"world": "ours"}) for n, e in eta_for(reg).tools.items()
                      if n != "hold_parcel"})  # η knows no hold_parcel of its own world
    held = run(reg, [call("find_parcels", query="shoes"), call("hold_parcel", parcel_id="p-41")], "Hold shoes")
    failed = [in_world(e, "ours") for e in ungrounded(reg)]
    assert "track_parcel" in texts(failed, ours, episodes=[*failed, in_world(held, "ours")])
    assert texts(failed, ours, episodes=[*failed, in_world(held, "theirs")]) == {}


def test_only_a_declared_record_id_from_an_earlier_result_counts() -> None:
    # the id came from the request, not a result: no source, so no text
    reg = registry()
    eta = eta_for(reg)
    asked = run(reg, [call("track_parcel", parcel_id="p-41")], "Track parcel p-41 and hold it")
    episodes = [*ungrounded(reg), asked]
    assert texts(episodes, eta, episodes=episodes) == {}
    # the listing held the id, but its tool declares no id field: its dicts are no records
    bare = registry(id_field=None)
    worked = run(bare, [call("find_parcels", query="shoes"), call("track_parcel", parcel_id="p-41")], "Track shoes")
    episodes = [*ungrounded(bare), worked]
    assert texts(episodes, eta_for(bare), episodes=episodes) == {}


def test_a_verified_success_in_the_experience_shows_where_its_id_came_from() -> None:
    reg = registry()
    eta = eta_for(reg)
    good = run(reg, [call("find_parcels", query="shoes"), call("track_parcel", parcel_id="p-41")],
               "Where are my shoes?", verdict=PASSED)
    text = texts(ungrounded(reg), eta, experience=distil([good]))["track_parcel"]
    assert "Example: track_parcel(parcel_id=<parcel_id from find_parcels's result>)" in text


def test_a_sub_agents_working_call_counts_and_reads_only_its_own_results() -> None:
    reg = registry()
    eta = eta_for(reg)
    delegated = run(reg, [{"kind": "delegate", "instruction": "track the shoes", "tools": ["find_parcels",
                                                                                          "track_parcel"]},
                          call("find_parcels", query="shoes"), call("track_parcel", parcel_id="p-41"), FINISH],
                    "Track my shoes")
    assert delegated.steps[0].children  # the calls ran in the child
    episodes = [*ungrounded(reg), delegated]
    assert "<parcel_id from find_parcels's result>" in texts(episodes, eta, episodes=episodes)["track_parcel"]
