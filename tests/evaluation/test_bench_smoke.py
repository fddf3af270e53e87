"""One real comparison on the small model: both configurations run and the report is valid."""

from __future__ import annotations

import json

import pytest

from pocketpilot.contracts import SamplerSettings
from pocketpilot.evaluation.compare import BENCH_SCHEMA, run_comparison
from pocketpilot.tasks import load_suite


@pytest.mark.slow
async def test_compare_one_memory_task_with_the_test_model(test_gguf) -> None:  # type: ignore[no-untyped-def]
    from pocketpilot.harness.planners import LlamaCppPlanner

    task = next(t for t in load_suite("dev") if t.id.startswith("mem-recall-"))
    task = task.model_copy(update={"max_steps": 3})  # both modes, a few steps each: what the report shows
    planner = LlamaCppPlanner(test_gguf, sampler=SamplerSettings(temperature=0.0, max_tokens=128))
    try:
        report = await run_comparison([task], planner, split="dev")
    finally:
        await planner.aclose()
    data = json.loads(json.dumps(report.to_json(), allow_nan=False))
    assert data["schema"] == BENCH_SCHEMA and set(data["runs"]) == {"bare", "harness"}
    for run in data["runs"].values():
        (outcome,) = run["outcomes"]
        assert outcome["task_id"] == task.id and 1 <= outcome["steps"] <= task.max_steps
        assert outcome["completion_tokens"] > 0 and outcome["wall_s"] > 0
    assert isinstance(data["runs"]["harness"]["outcomes"][0]["gate_violations"], int)
    assert set(data["lift_points"]) == {"memory", "ALL"}
