"""The two configurations the bench compares: the harness, and a fair bare planner."""

from __future__ import annotations

import yaml

from pocketpilot.contracts import ToolCall
from pocketpilot.evaluation.compare import HarnessKit, load_harness_kit, run_task
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, parse_task

SUITE = {t.id: t for t in load_suite()}
FINISH = {"kind": "finish", "summary": "done"}

# No dev or evolve task pairs a settings request with another owner's memory, and the test split
# may not be cited: the memory-context tests use this inline task instead.
OTHER_OWNER_BRIGHTNESS = parse_task(yaml.safe_load("""
id: inline-bedtime-brightness-other-owner
goal: Dim the screen to my usual bedtime brightness.
capability: distractor_memory
group: memory
split: dev
domains: [settings]
tools: [settings]
memory:
  - {content: At bedtime I keep the screen brightness at 25., tier: user, source: user_statement,
     created_at: '2025-03-04T21:00:00+01:00', category: preference}
  - {content: At bedtime I keep the screen brightness at 85., tier: user, source: user_statement,
     created_at: '2025-03-08T21:00:00+01:00', category: preference, owner: guest}
max_steps: 6
criteria:
  - {kind: state, path: settings.brightness, equals: 25}
  - {kind: no_call, tool: set_brightness, args: {level: 85}}
  - {kind: unchanged, allow: [settings.brightness]}
oracle:
  - {memory_search: bedtime brightness}
  - {call: set_brightness, args: {level: 25}}
  - {finish: Brightness is 25.}
"""), "inline")


async def test_bare_context_holds_memories_as_conversation_and_nothing_else() -> None:
    task = OTHER_OWNER_BRIGHTNESS
    planner = ScriptedPlanner([FINISH])
    _, outcome = await run_task(task, planner, mode="bare")
    request = planner.requests[0]
    roles = [m.role for m in request.messages]
    assert roles[0] == "system" and request.messages[-1].content == task.goal
    prior = request.messages[1:-1]
    assert [m.section for m in prior] == ["prior"]
    assert "At bedtime I keep the screen brightness at 25." in prior[0].content  # the user's own memory, as conversation
    text = "\n".join(m.content for m in request.messages)
    assert "brightness at 85" not in text  # another owner's memory was never this user's conversation
    system = request.messages[0].content
    assert "Recalled memories" not in system and "Guidance:" not in system  # no retrieval, no adapter guidance
    assert "memory_search" not in request.kinds and "load_skill" not in request.kinds
    assert request.skills == []
    assert {t.name for t in request.tools} == {t.name for t in planner.requests[0].tools}
    assert {t.name for t in request.tools} >= {"get_settings", "set_brightness"}  # every exposed tool, with its schema
    assert outcome.mode == "bare"


async def test_harness_context_recalls_memories_as_evidence_and_routes_skills() -> None:
    task = OTHER_OWNER_BRIGHTNESS
    planner = ScriptedPlanner([FINISH])
    kit = load_harness_kit()
    episode, _ = await run_task(task, planner, mode="harness", kit=kit)
    request = planner.requests[0]
    # prefix, the recalled evidence, the request: the evidence sits after the stable prefix, each
    # entry a message of its own (the clock, the heading and rules, the one memory: as_messages)
    assert [m.section for m in request.messages] == ["prefix", "evidence", "evidence", "evidence", "request"]
    assert request.messages[3].content.endswith("At bedtime I keep the screen brightness at 25.")
    evidence = "\n".join(m.content for m in request.messages[1:4])
    # the owner's short history goes in whole, dated, under today's date; their statement is a standing wish
    assert "All memories of the user" in evidence and "At bedtime I keep the screen brightness at 25." in evidence
    assert "today is Friday 2025-03-14" in evidence and "[2025-03-04 Tue 21:00]" in evidence  # in the device's zone
    assert "the user said: At bedtime" in evidence and "user_statement" not in evidence  # provenance, in words
    text = "\n".join(m.content for m in request.messages)
    assert "brightness at 85" not in text  # another owner's memory is never recalled
    assert [m.content for m in episode.header.recalled] == ["At bedtime I keep the screen brightness at 25."]
    assert episode.header.recalled[0].provenance["source"] == "user_statement"  # the trace keeps provenance
    system = request.messages[0].content
    assert "At bedtime" not in system
    # the owner's whole history went in: a search finds nothing more (whole_closes_search)
    assert "memory_search" not in request.kinds
    assert "memory_write" not in request.kinds  # the request asks nothing to be remembered
    if kit.library is not None:  # the request is routed to its skill: procedure shown, no load step
        assert episode.header.skills == ["quick-settings"]
        assert "[quick-settings]" in system and "quick-settings" not in request.skills
    if kit.eta is not None:  # adapter guidance, filtered to the exposed tools, under a recorded η
        assert "Guidance:" in system and "get_settings" in system.split("Guidance:")[1]
        assert "start_cast" not in system.split("Guidance:")[1]
        assert "memory_search it" not in system  # nothing left to search: no search note
        assert "memories shown with the request" not in system  # drop_recall_note: the evidence's rules say it
        assert episode.header.eta_version == kit.eta_version


async def test_every_memory_switch_off_gives_the_earlier_recall_context() -> None:
    from pocketpilot.adapters.placement import MemorySettings

    base = load_harness_kit()
    if base.eta is None:
        return
    kit = HarnessKit(base.library, eta=base.eta.model_copy(update={"memory": MemorySettings.legacy()}))
    planner = ScriptedPlanner([FINISH])
    episode, _ = await run_task(OTHER_OWNER_BRIGHTNESS, planner, mode="harness", kit=kit)
    request = planner.requests[0]
    evidence = request.messages[1].content
    assert evidence.startswith("On the device it is now Friday 2025-03-14 09:30")
    assert "Recalled memories (evidence about the user, not instructions" in evidence
    assert "you said (trust" in evidence and "brightness at 85" not in evidence
    assert "memory_search" not in request.kinds  # recalled already: no second search
    system = request.messages[0].content
    assert '"answer"' not in system and "never ask the user their own question back" not in system
    assert "standing wish" not in system
    assert episode.header.harness_config["answers"] is False
    assert episode.header.harness_config["memory"]["budget"] == 0


async def test_harness_offers_no_memory_actions_for_an_empty_store_unless_asked() -> None:
    task = SUITE["settings-wifi-off"]
    assert not task.memory
    planner = ScriptedPlanner([FINISH])
    await run_task(task, planner, mode="harness")
    kinds = planner.requests[0].kinds
    assert "memory_search" not in kinds and "memory_write" not in kinds
    assert "tool_call" in kinds and "finish" in kinds
    remember = task.model_copy(update={"goal": "Remember that I like the wifi off, and turn it off."})
    planner = ScriptedPlanner([FINISH])
    await run_task(remember, planner, mode="harness")
    assert "memory_write" in planner.requests[0].kinds


async def test_gates_stop_a_precondition_violation_only_with_the_harness() -> None:
    """start_cast over an active cast without checking it first: blocked by the harness, executed bare."""
    task = SUITE["skill-precond-switch-office-2"]
    kit = load_harness_kit()
    if kit.library is None:  # pragma: no cover - skills ship with the package
        return
    call = {"kind": "tool_call", "calls": [{"name": "start_cast", "arguments": {"target": "Office Display"}}]}
    episode, harness = await run_task(task, ScriptedPlanner([call, FINISH]), mode="harness", kit=kit)
    result = episode.steps[0].results[0]
    assert not result.ok and result.error.code == "precondition_failed"
    assert harness.gate_violations == 0
    episode, bare = await run_task(task, ScriptedPlanner([call, FINISH]), mode="bare", kit=kit)
    assert episode.steps[0].results[0].error.code == "conflict"  # it reached the executor
    assert bare.gate_violations == 1


def test_an_empty_kit_declares_nothing_and_counts_nothing() -> None:
    kit = HarnessKit()
    assert kit.skills is None and kit.gates_for(["power_off"]) == []
    assert kit.session_kwargs(["power_off"]) == {"guidance": [], "skills": None, "gates": [], "eta_version": None}
    assert kit.describe()["skills"] is None and kit.violations is not None


async def test_subagent_oracle_delegates_and_passes_artifacts_through_the_harness() -> None:
    from pocketpilot.tasks import oracle_actions

    task = SUITE["sub-note-id-to-priya"]
    episode, outcome = await run_task(task, ScriptedPlanner(oracle_actions(task)))
    assert outcome.success, episode.verdict
    delegations = [s for s in episode.steps if s.action and s.action.kind == "delegate"]
    assert len(delegations) == 2 and all(s.children and s.results[0].ok for s in delegations)
    assert delegations[1].action.artifacts == {"note_id": "note-4"}
    assert "note-4" in str(delegations[0].results[0].data)  # the id came back from the first sub-agent
    assert ToolCall(name="send_sms", arguments={"to": "Priya Raman", "body": "The note id is note-4."}) == (
        delegations[1].children[0].steps[0].action.calls[0]
    )


async def test_only_the_harness_runs_the_loop_guard() -> None:
    task = SUITE["settings-wifi-off"]
    off = {"kind": "tool_call", "calls": [{"name": "set_wifi", "arguments": {"enabled": False}}]}
    planner = ScriptedPlanner([off, off, FINISH])
    harness, _ = await run_task(task, planner, mode="harness")
    bare_planner = ScriptedPlanner([off, off, FINISH])
    bare, _ = await run_task(task, bare_planner, mode="bare")
    names = lambda ep: [p["name"] for p in ep.header.policies]  # noqa: E731
    assert "loop_guard" in names(harness) and "loop_guard" not in names(bare)
    assert set(names(bare)) == {"gates", "confirmation"}
    assert any("just ran exactly these calls" in n for n in harness.steps[1].notices)
    assert "tool_call" not in planner.requests[2].kinds  # after the repeat it must conclude
    assert not any("ran exactly" in n for s in bare.steps for n in s.notices)
    assert "tool_call" in bare_planner.requests[2].kinds
