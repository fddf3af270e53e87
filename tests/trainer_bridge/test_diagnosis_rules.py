from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketpilot.adapters import (
    Eta,
    RevisionStore,
    RoutingNote,
    SkillEntry,
    ToolEntry,
    apply_revision,
    load_eta,
    save_eta,
)
from pocketpilot.cli.diagnose import diagnose as diagnose_cli
from pocketpilot.contracts import (
    AskUser,
    CriterionResult,
    Finish,
    LoadSkill,
    MemorySearch,
    Notice,
    RetrievedMemory,
    ToolResult,
    Verdict,
)
from pocketpilot.errors import UsageError
from pocketpilot.harness.planners.scripted import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions
from pocketpilot.trainer_bridge.diagnosis import diagnose
from pocketpilot.trainer_bridge.diagnosis_revisions import measure_on_evolve, propose_revisions
from pocketpilot.trainer_bridge.export_synthetic import make_episode

KNOWN = ["set_wifi", "send_sms", "get_battery", "power_off", "save_note"]


def fail(*criteria: tuple[str, str] | tuple[str, str, dict]) -> Verdict:
    """Failed criteria; the third element holds the structured fields a verifier sets (kind, tool, missing)."""
    return Verdict(success=False, criteria=[CriterionResult(name=c[0], passed=False, detail=c[1], **(c[2] if len(c) > 2 else {}))
                                            for c in criteria])


def never(tool: str) -> tuple[str, str, dict]:
    return (f"call {tool}", f"{tool} was never called", {"kind": "call", "tool": tool, "missing": True})


def call(name, args, result):
    return {"calls": [(name, args)], "results": [result]}


FIN = {"action": Finish(summary="done"), "results": []}

CASES = {
    "routing": ([call("make_coffee", {}, ToolResult.failure("unknown_tool", "'make_coffee' is not exposed")), FIN],
                fail(never("set_wifi")), "finish", [0]),
    "argument_grounding": ([call("send_sms", {"to": "Bob"}, ToolResult.failure("not_found", "no contact Bob")), FIN],
                           fail(("call send_sms", "0 of 1 needed", {"kind": "call", "tool": "send_sms"})), "finish", [0]),
    "state_tracking": ([call("set_wifi", {"enabled": True}, ToolResult.failure("conflict", "already casting")), FIN],
                       fail(("state cast.target == 'x'", "cast.target is 'y'")), "finish", [0]),
    "recovery": ([call("get_battery", {"unit": "k"}, ToolResult.failure("bad", "nope")),
                  {**call("get_battery", {"unit": "k"}, ToolResult.failure("bad", "nope")),
                   "notices": [Notice("get_battery failed twice", policy="repeat_failure", code="repeated_failure")]}],
                 fail(("state settings.wifi == false", "settings.wifi is true")), "max_steps", [1]),
    "decomposition": ([{"calls": [("set_wifi", {"enabled": False}), ("send_sms", {"to": "a", "body": "b"})],
                        "results": [ToolResult.success(), ToolResult.success()]}, FIN],
                      fail(("order set_wifi before send_sms",
                            "set_wifi (step 0) came in the same parallel batch as send_sms (step 0)",
                            {"kind": "order"})),
                      "finish", [0]),
    "premature_stop": ([call("get_battery", {}, ToolResult.success({"level": 5})), FIN],
                       fail(never("set_wifi")), "finish", [1]),
    "wrong_tool_exposure": ([call("power_off", {}, ToolResult.failure("unknown_tool", "'power_off' is not exposed")), FIN],
                            fail(never("power_off")), "finish", [0]),
    "missing_skill": ([{"action": LoadSkill(name="notes"),
                        "results": [ToolResult.failure("unknown_skill", "no loadable skill 'notes'")]},
                       FIN], fail(never("save_note")), "finish", [0]),
    "conflicting_skill": ([{"action": LoadSkill(name="a"), "results": [ToolResult.success({"loaded": "a"})]},
                           {"action": LoadSkill(name="b"), "results": [ToolResult.success({"loaded": "b"})]},
                           call("set_wifi", {"enabled": False},
                                ToolResult.failure("precondition_failed", "set_wifi: save a note first")),
                           FIN], fail(("state settings.wifi == false", "settings.wifi is true")), "finish", [2]),
    "retrieval_miss": ([{"action": MemorySearch(query="sister birthday"), "results": [ToolResult.success({"memories": []})]},
                        {"action": AskUser(question="When is it?"), "results": []}],
                       fail(("stop by finish", "stopped by ask_user", {"kind": "stop"})), "ask_user", [0]),
    "stale_memory": ([{"action": MemorySearch(query="sister birthday"), "results": [ToolResult.success({"memories": []})],
                       "retrieved": [RetrievedMemory(id="m1", tier="user", content="May 3", score=1.0,
                                                     provenance={"status": "superseded", "superseded_by": "m2"})]},
                      FIN], fail(("answer mentions 'June 5'", "missing")), "finish", [0]),
    "incomplete_feedback": ([call("set_wifi", {"enabled": False}, ToolResult(ok=False)), FIN],
                            fail(("state settings.wifi == false", "settings.wifi is true")), "finish", [0]),
}


@pytest.mark.parametrize("category", sorted(CASES))
def test_each_category_is_attributed_with_evidence_steps(category: str) -> None:
    steps, verdict, stop, evidence = CASES[category]
    ep = make_episode(steps, verdict=verdict, stop_reason=stop)
    d = diagnose(ep, known_tools=KNOWN)
    assert d.failed
    assert d.category == category, d.findings
    assert d.side == ("harness" if category in (
        "wrong_tool_exposure", "missing_skill", "conflicting_skill", "retrieval_miss", "stale_memory", "incomplete_feedback"
    ) else "model")
    assert d.evidence_steps == evidence


def test_success_and_unverified_episodes_are_not_diagnosed() -> None:
    steps = [call("set_wifi", {"enabled": False}, ToolResult.success()), FIN]
    assert not diagnose(make_episode(steps, verdict=Verdict(success=True)), known_tools=KNOWN).failed
    assert not diagnose(make_episode(steps, verdict=None), known_tools=KNOWN).failed
    d = diagnose(make_episode(steps, verdict=fail(("weird", "?"))), known_tools=KNOWN)
    assert (d.side, d.category) == ("unknown", "unattributed")


def _eta() -> Eta:
    tools = {n: ToolEntry(description=n) for n in KNOWN}
    skills = {"notes": SkillEntry(version="1", description="notes", requires=["save_note"], sha256="0" * 64)}
    return Eta(tools=tools, skills=skills, notes=[RoutingNote(id="base", text="be careful")])


def test_harness_findings_become_rule_checked_revisions_pending_until_approved(tmp_path: Path) -> None:
    eta = _eta()
    diags = []
    for cat in ("wrong_tool_exposure", "retrieval_miss", "incomplete_feedback", "routing"):
        steps, verdict, stop, _ = CASES[cat]
        diags.append(diagnose(make_episode(steps, verdict=verdict, stop_reason=stop, episode_id=cat), known_tools=KNOWN))
    # a precondition block on save_note with no skill loaded: map it to the notes skill
    blocked = make_episode([call("save_note", {}, ToolResult.failure("precondition_failed", "unlock first")), FIN],
                           verdict=fail(("x", "y")), episode_id="blocked")
    diags.append(diagnose(blocked, known_tools=KNOWN))
    candidates, skipped = propose_revisions(diags, eta)
    by_cat = {c.category: c for c in candidates}
    assert set(by_cat) == {"wrong_tool_exposure", "retrieval_miss", "missing_skill"}
    assert by_cat["missing_skill"].revision.ops[0].op == "map_tool"
    assert any("incomplete_feedback" in s for s in skipped)  # no η change fixes a tool's error reporting
    for c in candidates:
        assert c.base_version == eta.version != c.new_version
        assert apply_revision(eta, c.revision).version == c.new_version
        assert c.diff and c.evidence
    # stale evidence (another η) does not count; min_support is enforced
    assert propose_revisions(diags, eta, min_support=2)[0] == []
    old = [d.model_copy(update={"eta_version": "0123456789abcdef"}) for d in diags]
    assert propose_revisions(old, eta)[0] == []
    # through the CLI: proposals are pending, η unchanged until approve
    eta_file = tmp_path / "eta.json"
    save_eta(eta, eta_file)
    traces = tmp_path / "traces"
    traces.mkdir()
    r_steps, r_verdict, _, _ = CASES["retrieval_miss"]
    _write_trace(make_episode(r_steps, verdict=r_verdict, stop_reason="ask_user", episode_id="r1"), traces / "r1.jsonl")
    res = CliRunner().invoke(diagnose_cli, [str(traces), "--eta", str(eta_file), "--propose"])
    assert res.exit_code == 0, res.output
    assert "harness/retrieval_miss" in res.output
    store = RevisionStore(eta_file)
    [pending] = store.pending()
    assert load_eta(eta_file).version == eta.version
    new = store.approve(pending.id, "reviewer")
    assert load_eta(eta_file).version == new.version != eta.version


def _write_trace(ep, path: Path) -> None:
    lines = [{"type": "header", "schema": 1, "header": ep.header.model_dump(mode="json")}]
    lines += [{"type": "step", "step": s.model_dump(mode="json")} for s in ep.steps]
    lines.append({"type": "end", "stop_reason": ep.stop_reason, "stop_detail": "",
                  "verdict": ep.verdict.model_dump(mode="json") if ep.verdict else None, "ended_at": None})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_diagnose_cli_json_and_bad_input(tmp_path: Path) -> None:
    for cat in ("routing", "stale_memory"):
        steps, verdict, stop, _ = CASES[cat]
        _write_trace(make_episode(steps, verdict=verdict, stop_reason=stop, episode_id=cat), tmp_path / f"{cat}.jsonl")
    res = CliRunner().invoke(diagnose_cli, [str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    cats = sorted(json.loads(line)["category"] for line in res.output.splitlines())
    assert cats == ["routing", "stale_memory"]
    res = CliRunner().invoke(diagnose_cli, [str(tmp_path / "missing")])
    assert res.exit_code != 0 and isinstance(res.exception, UsageError)


def test_evolve_measurement_before_and_after() -> None:
    evolve = [t for t in load_suite("evolve") if t.oracle][:2]
    dev = load_suite("dev")[:1]
    eta = _eta()
    after = eta.model_copy(update={"notes": [*eta.notes, RoutingNote(id="extra", text="new note")]})

    def factory(task, e):  # the "after" planner follows the oracle, the "before" one gives up
        return ScriptedPlanner(oracle_actions(task) if e.version == after.version else [AskUser(question="?")])

    m = asyncio.run(measure_on_evolve(evolve, factory, eta, after))
    assert m.tasks == [t.id for t in evolve]
    assert m.after_success == [True] * len(evolve)
    assert m.before_rate < m.after_rate and m.delta > 0
    with pytest.raises(UsageError, match="evolve split only"):
        asyncio.run(measure_on_evolve(dev, factory, eta, after))
