from __future__ import annotations

import pytest

from pocketpilot.adapters import Eta, ToolEntry
from pocketpilot.adapters.errors import RevisionError
from pocketpilot.contracts import CriterionResult, Finish, Notice, ToolResult, ToolSpec, Verdict
from pocketpilot.trainer_bridge.candidates import (
    apply_candidate,
    combine,
    eviction_candidates,
    experience_candidate,
    generate_candidates,
    policy_off_candidates,
    tool_text_candidates,
)
from pocketpilot.trainer_bridge.diagnosis import diagnose
from pocketpilot.trainer_bridge.distil import distil
from pocketpilot.trainer_bridge.export_synthetic import make_episode

SPEC = ToolSpec(name="set_mode", description="Set the phone's sound mode",
                parameters={"type": "object", "properties": {"mode": {"enum": ["silent", "vibrate", "ring"]}}})
OTHER = ToolSpec(name="get_mode", description="Read the sound mode", read_only=True, effect="read",
                 parameters={"type": "object", "properties": {}})
PASS = Verdict(success=True, criteria=[CriterionResult(name="c", passed=True)])
FAILED = Verdict(success=False, criteria=[CriterionResult(name="mode", passed=False, kind="state")])


def eta() -> Eta:
    return Eta(tools={s.name: ToolEntry(description=s.description, parameters=s.parameters) for s in (SPEC, OTHER)})


def bad_run(eid: str, message: str = "mode must be one of silent, vibrate, ring"):
    return make_episode([{"calls": [("set_mode", {"mode": "quiet"})],
                          "results": [ToolResult.failure("invalid_arguments", message)]},
                         {"action": Finish(summary="done"), "results": []}],
                        request="Make the phone quiet", verdict=FAILED, tools=[SPEC, OTHER], episode_id=eid)


def good_run(eid: str):
    return make_episode([{"calls": [("get_mode", {})], "results": [ToolResult.success({"mode": "ring"})]},
                         {"calls": [("set_mode", {"mode": "silent"})], "results": [ToolResult.success()]}],
                        request="Silence my phone", verdict=PASS, tools=[SPEC, OTHER], episode_id=eid)


def test_repeated_argument_errors_become_a_tool_text_rewrite() -> None:
    e = eta()
    diags = [diagnose(bad_run(f"b{i}"), known_tools=["set_mode", "get_mode"]) for i in range(2)]
    exp = distil([good_run("g1")])
    [cand] = tool_text_candidates(diags, e, experience=exp)
    assert cand.kind == "tool_text" and cand.target == "set_mode"
    new = apply_candidate(e, cand)
    text = new.tools["set_mode"].revised_description
    assert '"silent"|"vibrate"|"ring"' in text and 'set_mode(mode="silent")' in text
    assert new.tools["set_mode"].parameters == e.tools["set_mode"].parameters  # the schema is untouched
    assert tool_text_candidates(diags[:1], e, experience=exp) == []  # one episode is not repeated


def test_diagnosis_reads_codes_not_prose() -> None:
    e = eta()
    a = [diagnose(bad_run(f"b{i}"), known_tools=["set_mode"]) for i in range(2)]
    b = [diagnose(bad_run(f"b{i}", message="völlig andere Worte"), known_tools=["set_mode"]) for i in range(2)]
    assert [f.code for d in a for f in d.findings] == [f.code for d in b for f in d.findings]
    ta, tb = tool_text_candidates(a, e), tool_text_candidates(b, e)
    assert [c.revision.ops for c in ta] == [c.revision.ops for c in tb]
    warned = make_episode([{"calls": [("set_mode", {"mode": "x"})], "results": [ToolResult.failure("bad", "m")],
                            "notices": [Notice("anything at all", policy="repeat_failure", code="repeated_failure")]}],
                          verdict=FAILED, tools=[SPEC], episode_id="w")
    found = diagnose(warned, known_tools=["set_mode"]).findings
    assert any(f.category == "recovery" and f.policy == "repeat_failure" for f in found)
    reworded = make_episode([{"calls": [("set_mode", {"mode": "x"})], "results": [ToolResult.failure("bad", "m")],
                              "notices": ["The same call failed twice; stop guessing"]}],
                            verdict=FAILED, tools=[SPEC], episode_id="w2")
    assert not any(f.category == "recovery" for f in diagnose(reworded, known_tools=["set_mode"]).findings)


def test_experience_eviction_and_policy_off_candidates_apply_to_a_new_eta() -> None:
    e = eta()
    exp = distil([good_run("g1"), good_run("g2")])
    cand = experience_candidate(e, exp)
    assert cand is not None and cand.kind == "experience"
    learned = apply_candidate(e, cand)
    assert learned.experience[0].provenance == ["g1", "g2"] and e.experience == []
    assert experience_candidate(learned, exp) is None  # nothing new
    [evict] = eviction_candidates(learned, {exp[0].id: 3})
    assert apply_candidate(learned, evict).experience == []
    assert eviction_candidates(learned, {exp[0].id: 1}) == []
    [off] = policy_off_candidates(e, {"loop_guard": 3, "gates": 9, "scope_guard": 1})
    assert off.target == "loop_guard"
    assert "loop_guard" not in [p.name for p in apply_candidate(e, off).policies]


def test_generate_and_combine() -> None:
    e = eta()
    diags = [diagnose(bad_run(f"b{i}"), known_tools=["set_mode", "get_mode"]) for i in range(2)]
    cands = generate_candidates(diags, e, experience=distil([good_run("g")]), ablation={"undo_guard": 2})
    assert sorted(c.kind for c in cands) == ["experience", "policy_off", "tool_text"]
    rev = combine(e, cands, "evolve-1", "accepted on evolve")
    assert len(rev.ops) == 3
    off = next(c for c in cands if c.kind == "policy_off")
    with pytest.raises(RevisionError, match="no policy"):
        combine(e, [off, off], "dup", "twice")  # the combined ops are rule-checked together


def test_harm_is_measured_where_an_entry_was_shown() -> None:
    from pocketpilot.trainer_bridge.candidates import experience_harm, shown_experience

    def run(task: str, ok: bool, entries: list[str]):
        ep = make_episode([], task_id=task, verdict=PASS if ok else FAILED, episode_id=task)
        header = ep.header.model_copy(update={"policies": [{"name": "experience_hints", "params": {"entries": entries}}]})
        return ep.model_copy(update={"header": header})

    after = [run("t1", False, ["exp-aaaa"]), run("t2", False, ["exp-aaaa", "exp-bbbb"]), run("t3", True, ["exp-bbbb"])]
    assert shown_experience(after[1]) == ["exp-aaaa", "exp-bbbb"]
    assert experience_harm({"t1": True, "t2": True, "t3": False}, after) == {"exp-aaaa": 2, "exp-bbbb": 0}


def test_a_needed_tool_left_out_by_retrieval_widens_it() -> None:
    from pocketpilot.adapters.tool_retrieval import ToolRetrievalSettings
    from pocketpilot.trainer_bridge.candidates import exposure_candidates

    def missing(eid: str):  # the criterion needed set_mode; the header's exposed tools lacked it
        return make_episode([{"action": Finish(summary="done"), "results": []}], request="mute", tools=[OTHER],
                            verdict=Verdict(success=False, criteria=[CriterionResult(
                                name="call set_mode", passed=False, kind="call", tool="set_mode", missing=True)]),
                            episode_id=eid)

    diags = [diagnose(missing(f"x{i}"), known_tools=["set_mode", "get_mode"]) for i in range(2)]
    assert exposure_candidates(diags, eta()) == []  # no retrieval in η: nothing of η's to widen
    e = eta().model_copy(update={"tool_retrieval": ToolRetrievalSettings(k=3)})
    [cand] = exposure_candidates(diags, e)
    assert cand.kind == "exposure" and apply_candidate(e, cand).tool_retrieval.k == 7
    assert exposure_candidates(diags[:1], e) == []


def test_retrieval_misses_and_stale_memories_tune_the_memory_section() -> None:
    from pocketpilot.adapters.placement import MemorySettings
    from pocketpilot.contracts import MemorySearch, RetrievedMemory
    from pocketpilot.trainer_bridge.candidates import memory_candidates

    def missed(eid: str):
        return make_episode([{"action": MemorySearch(query="sister birthday"), "results": []},
                             {"action": Finish(summary="?"), "results": []}], verdict=FAILED, episode_id=eid)

    def stale(eid: str):
        old = RetrievedMemory(id="m", tier="user", content="x", score=1.0, provenance={"status": "superseded"})
        return make_episode([{"action": MemorySearch(query="x"), "results": [], "retrieved": [old]},
                             {"action": Finish(summary="?"), "results": []}], verdict=FAILED, episode_id=eid)

    e = eta().model_copy(update={"memory": MemorySettings.legacy()})
    diags = [diagnose(missed(f"a{i}"), known_tools=[]) for i in range(2)] + \
            [diagnose(stale(f"s{i}"), known_tools=[]) for i in range(2)]
    cands = {c.target: c for c in memory_candidates(diags, e)}
    assert sorted(cands) == ["retrieval_miss", "stale_memory"] and all(c.kind == "memory_policy" for c in cands.values())
    more = apply_candidate(e, cands["retrieval_miss"]).memory
    assert more.recall_k == 10 and more.keep_search and not more.dated
    assert apply_candidate(e, cands["stale_memory"]).memory.dated
    assert memory_candidates(diags[:1], e) == []  # one episode is not enough
    assert [c.target for c in memory_candidates(diags, eta())] == ["retrieval_miss"]  # dated is the default already
