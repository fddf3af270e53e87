"""Each step records the policies whose outcome changed it, and only those.

The policy ablation (``bench/bench_ablation.py``) reruns a task without a policy only where the
policy is named on some step: a name missing where a policy acted would make the ablation
skip a task the policy changed, and a name recorded where nothing changed would cost reruns.
"""

from __future__ import annotations

import json

from scripted_actions import call

from pocketpilot.contracts import Step
from pocketpilot.executor import ToolRegistry
from pocketpilot.harness import AllowAll, DenyAll, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tracing.trace import read_trace

FINISH = {"kind": "finish", "summary": "done"}


async def _run(registry: ToolRegistry, script: list, request: str, **kw: object):
    return await Session(ScriptedPlanner(script), registry, confirm=kw.pop("confirm", AllowAll()), **kw).run(request)


def _by_step(episode) -> list[list[str]]:
    return [s.interventions for s in episode.steps]


async def test_a_run_no_policy_changed_records_no_intervention(registry, tmp_path):
    episode = await _run(registry, [call("set_lamp", on=True), call("convert", value=3, unit="km"), FINISH],
                         "turn the lamp on and convert 3 km", trace_dir=tmp_path)
    assert episode.stop_reason == "finish"
    assert _by_step(episode) == [[], [], []]
    loaded, _ = read_trace(next(tmp_path.glob("*.jsonl")))
    assert _by_step(loaded) == [[], [], []]


async def test_repeat_failure_and_the_loop_guard_are_named_on_the_steps_they_acted_on(registry, tmp_path):
    bad = call("convert", value=0, unit="km")
    episode = await _run(registry, [bad] * 5 + [FINISH, FINISH], "convert", trace_dir=tmp_path)
    # 1-2: the repeated failure is warned about; 3-4: the loop guard holds the call (a hold with
    # no notice of its own on step 3: only the record says the guard acted there)
    assert _by_step(episode) == [[], ["repeat_failure"], ["repeat_failure"], ["loop_guard", "repeat_failure"],
                                 ["loop_guard", "repeat_failure"], []]
    assert not any(n.policy == "loop_guard" for n in episode.steps[3].notices)
    loaded, complete = read_trace(next(tmp_path.glob("*.jsonl")))
    assert complete and _by_step(loaded) == _by_step(episode)


async def test_send_back_is_named_on_the_refusal_it_sent_back(registry):
    script = [call("convert", value="three", unit="yards"), {"kind": "refuse", "reason": "cannot"}, FINISH]
    episode = await _run(registry, script, "convert 3 km")
    assert episode.steps[0].results[0].error.code == "invalid_arguments"
    assert _by_step(episode) == [[], ["send_back"], []]
    assert episode.stop_reason == "finish"


async def test_asked_back_is_named_on_the_question_it_sent_back(registry):
    ask = {"kind": "ask_user", "question": "When did your sister move to Lisbon?"}
    episode = await _run(registry, [ask, FINISH], "When did my sister move to Lisbon?")
    assert _by_step(episode) == [["asked_back"], []]


async def test_a_clarifying_question_is_no_intervention(registry):
    ask = {"kind": "ask_user", "question": "Which lamp: the desk or the ceiling one?"}
    episode = await _run(registry, [ask], "turn the lamp on")
    assert episode.stop_reason == "ask_user" and _by_step(episode) == [[]]


async def test_a_denied_confirmation_is_named_and_a_policy_left_out_is_never_named(registry):
    episode = await _run(registry, [call("wipe"), FINISH], "wipe everything", confirm=DenyAll())
    assert _by_step(episode)[0] == ["confirmation"]
    bad = call("convert", value=0, unit="km")
    without = await _run(registry, [bad, bad, FINISH], "convert", policies=[])
    assert _by_step(without) == [[], [], []]  # repeat_failure is not in force: nothing warns


def test_a_step_from_a_trace_older_than_the_field_reads_as_no_intervention():
    step = Step.model_validate_json(json.dumps({"index": 0, "context_digest": "d"}))
    assert step.interventions == []
    assert Step.model_validate_json(step.model_dump_json()).interventions == []
