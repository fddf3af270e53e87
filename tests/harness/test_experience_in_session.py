"""η's experience reaches the planner: worked examples in the prompt, step hints as notices, the header records it."""

from __future__ import annotations

from pocketpilot.adapters import Eta, ToolEntry, session_kwargs
from pocketpilot.adapters.experience import ExperienceConfig
from pocketpilot.contracts import CriterionResult, ToolResult, Verdict
from pocketpilot.harness import Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.policies.experience_hints import EXPERIENCE_HINT
from pocketpilot.trainer_bridge.distil import distil
from pocketpilot.trainer_bridge.export_synthetic import make_episode

BAD = {"kind": "tool_call", "calls": [{"name": "convert", "arguments": {"value": 0, "unit": "km"}}]}
FINISH = {"kind": "finish", "summary": "done"}
PASS = Verdict(success=True, criteria=[CriterionResult(name="c", passed=True)])


def learned(registry) -> Eta:
    specs = registry.tools()
    ep = make_episode([
        {"calls": [("convert", {"value": 0, "unit": "km"})], "results": [ToolResult.failure("zero_value", "zero")]},
        {"calls": [("convert", {"value": 37.5, "unit": "km"})], "results": [ToolResult.success(23.3)]},
    ], request="Convert 37.5 km into miles", verdict=PASS, tools=specs, episode_id="src")
    tools = {s.name: ToolEntry(description=s.description, parameters=s.parameters) for s in specs}
    return Eta(tools=tools, experience=distil([ep]))


def prompt(planner: ScriptedPlanner) -> str:
    return planner.requests[0].messages[0].content


async def test_examples_hints_and_header(registry) -> None:
    eta = learned(registry)
    kw = session_kwargs(eta, registry.tools(), request="convert 12 km to miles")
    planner = ScriptedPlanner([BAD, FINISH])
    episode = await Session(planner, registry, **kw).run("convert 12 km to miles")
    text = prompt(planner)
    assert "Worked examples" in text and "convert(value=<value>" in text and "37.5" not in text
    hints = [n for n in episode.steps[0].notices if n.code == EXPERIENCE_HINT]
    assert len(hints) == 1 and "<value>" in hints[0] and "37.5" not in hints[0]
    (policy,) = [p for p in episode.header.policies if p["name"] == "experience_hints"]
    assert policy["params"]["entries"] == [eta.experience[0].id] and policy["params"]["library"]
    assert episode.header.eta_version == eta.version


async def test_an_unrelated_request_and_the_switch_leave_the_session_as_before(registry) -> None:
    eta = learned(registry)
    bare = eta.model_copy(update={"experience": []})
    for request, version in (("turn the lamp on", eta), ("convert 12 km", eta.model_copy(
            update={"experience_config": ExperienceConfig(enabled=False)}))):
        got = session_kwargs(version, registry.tools(), request=request)
        want = session_kwargs(bare, registry.tools(), request=request)
        assert [p.name for p in got["policies"]] == [p.name for p in want["policies"]]
        assert got["guidance_for"](["convert"]) == want["guidance_for"](["convert"])


async def test_examples_follow_the_tools_exposed_now(registry) -> None:
    kw = session_kwargs(learned(registry), registry.tools(), request="convert 12 km to miles")
    assert any("Worked examples" in g for g in kw["guidance_for"](["convert", "set_lamp"]))
    assert not any("Worked examples" in g for g in kw["guidance_for"](["set_lamp"]))


async def test_a_revised_tool_text_is_shown_in_place_of_the_tools_own(registry) -> None:
    eta = Eta(tools={s.name: ToolEntry(description=s.description, parameters=s.parameters,
                                       revised_description="Convert km<->mi. unit: km|mi. Example: convert(value=3, unit=\"km\")"
                                       if s.name == "convert" else None) for s in registry.tools()})
    planner = ScriptedPlanner([FINISH])
    await Session(planner, registry, **session_kwargs(eta, registry.tools(), request="convert 3 km")).run("convert 3 km")
    assert "Example: convert(value=3" in prompt(planner)
    plain = Eta(tools={s.name: ToolEntry(description=s.description, parameters=s.parameters) for s in registry.tools()})
    assert "tool_text" not in session_kwargs(plain, registry.tools(), request="convert 3 km")


async def _pass(episode):
    return PASS


async def test_cli_learns_from_verified_traces_and_shows_it(registry, tmp_path) -> None:
    from click.testing import CliRunner

    from pocketpilot.adapters import load_eta, save_eta
    from pocketpilot.cli.main import cli

    good = {"kind": "tool_call", "calls": [{"name": "convert", "arguments": {"value": 42, "unit": "km"}}]}
    await Session(ScriptedPlanner([good, FINISH]), registry, verifier=_pass, trace_dir=tmp_path / "t").run(
        "convert 42 km to miles")
    unjudged = await Session(ScriptedPlanner([good, FINISH]), registry, trace_dir=tmp_path / "t").run("convert 42 km")
    eta = Eta(tools={s.name: ToolEntry(description=s.description, parameters=s.parameters) for s in registry.tools()})
    path = save_eta(eta, tmp_path / "eta.json")
    runner = CliRunner()
    res = runner.invoke(cli, ["adapter", "learn", str(path), str(tmp_path / "t"), "--id", "learn1"])
    assert res.exit_code == 0, res.output
    assert "+ experience exp-" in res.output and "convert <value> km to miles" in res.output
    res = runner.invoke(cli, ["adapter", "approve", str(path), "learn1", "--by", "rev"])
    assert res.exit_code == 0, res.output
    learned = load_eta(path)
    assert len(learned.experience) == 1 and len(learned.experience[0].provenance) == 1
    assert "experience: 1 workflow(s) from 1 run(s), shown on" in runner.invoke(cli, ["adapter", "show", str(path)]).output
    again = runner.invoke(cli, ["adapter", "learn", str(path), str(tmp_path / "t")])
    assert again.exit_code == 2 and again.output.count("\n") == 1 and "nothing new" in again.output
    approved = runner.invoke(cli, ["adapter", "learn", str(path), str(tmp_path / "t"), "--approved",
                                   unjudged.header.episode_id, "--owner", "alice", "--id", "learn2"])
    assert approved.exit_code == 0, approved.output
    runner.invoke(cli, ["adapter", "approve", str(path), "learn2", "--by", "rev"])
    owners = sorted((e.owner or "", len(e.provenance)) for e in load_eta(path).experience)
    assert owners == [("", 1), ("alice", 2)]  # the user's approval counts; the owner's runs are the owner's
    empty = tmp_path / "empty"
    empty.mkdir()
    assert runner.invoke(cli, ["adapter", "learn", str(path), str(empty)]).exit_code == 2
