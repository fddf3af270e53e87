"""Distilling the bundled dev split's oracle replays: what the evolve requests are then shown (no model)."""

from __future__ import annotations

import asyncio
import json

import pytest

from pocketpilot.adapters import session_kwargs
from pocketpilot.adapters.experience import SLOT_KEY
from pocketpilot.evaluation.task_episode import load_harness_kit, run_task_episode
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions, prepare
from pocketpilot.trainer_bridge.candidates import apply_candidate, experience_candidate
from pocketpilot.trainer_bridge.distil import distil


@pytest.fixture(scope="module")
def learned():
    kit = load_harness_kit()

    async def replays():
        return [(await run_task_episode(t, ScriptedPlanner(oracle_actions(t)), kit=kit))[0]
                for t in [t for t in load_suite("dev") if t.oracle][:12]]

    episodes = asyncio.run(replays())
    entries = distil(episodes)
    cand = experience_candidate(kit.eta, entries)
    assert cand is not None
    return kit, apply_candidate(kit.eta, cand), episodes


def _literals(value, schema_values):
    if isinstance(value, dict) and set(value) == {SLOT_KEY}:
        return []
    if isinstance(value, dict):
        return [x for v in value.values() for x in _literals(v, schema_values)]
    if isinstance(value, list):
        return [x for v in value for x in _literals(v, schema_values)]
    return [] if isinstance(value, bool) or value is None or value in schema_values else [value]


def test_dev_replays_become_slotted_workflows_that_name_no_task(learned) -> None:
    kit, eta, episodes = learned
    assert eta.experience and sum(len(e.provenance) for e in eta.experience) <= len(episodes)
    ids = {t.id for t in load_suite()}
    text = json.dumps([e.model_dump(mode="json") for e in eta.experience])
    assert not any(i in text for i in ids)
    for entry in eta.experience:
        for call in entry.calls:
            props = eta.tools[call.tool].parameters.get("properties", {})
            declared = [v for p in props.values() for v in p.get("enum", [])] + \
                       [p["const"] for p in props.values() if "const" in p]
            assert _literals(call.arguments, declared) == [], (entry.request, call)


def test_evolve_requests_see_examples_of_their_kind(learned) -> None:
    kit, eta, _ = learned
    shown = 0
    for task in load_suite("evolve")[:12]:
        run = prepare(task, memory=False)
        try:
            specs = run.executor.tools()
            kw = session_kwargs(eta, specs, library=kit.library, request=task.goal)
            notes = kw["guidance_for"]([s.name for s in specs])
        finally:
            run.close()
        examples = [g for g in notes if g.startswith("Worked examples")]
        shown += bool(examples)
        for g in examples:
            assert len(g) / 3.5 <= 800
    assert shown >= 3
