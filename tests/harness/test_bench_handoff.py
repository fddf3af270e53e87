"""``bench/bench_handoff.py``: the brief's variants on a dev hand-off task, with a scripted planner.

The parent replays the 1.5B's recorded first delegate of that task (the lookup not listed, the
place's name as its id); the child is competent but can only use the tools it is given.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_scripts import bench_script

from pocketpilot.contracts import ACTION_ADAPTER
from pocketpilot.errors import PlannerBackendError
from pocketpilot.evaluation.task_episode import load_harness_kit
from pocketpilot.harness.base import PlanRequest
from pocketpilot.harness.planners import ScriptedPlanner

TASK = "gen-handoff-read-0088"
SUITE = Path(__file__).resolve().parents[2] / "pocketpilot" / "tasks" / "suite"


class Competent(ScriptedPlanner):
    """The parent's recorded delegate, then its second half; a child that looks the place up when it can."""

    def __init__(self) -> None:
        super().__init__([])
        self.parent = [
            {"kind": "delegate", "instruction": "Get drive directions to Corner Bean Cafe.",
             "tools": ["get_directions", "start_navigation"], "artifacts": {"place_id": "Corner Bean Cafe"}},
            {"kind": "tool_call", "calls": [{"name": "save_draft", "arguments": {"subject": "Vet", "body": "0.19"}}]},
            {"kind": "finish", "summary": "drafted"},
        ]
        self.child = [
            {"kind": "tool_call", "calls": [{"name": "search_places", "arguments": {"query": "Corner Bean Cafe"}}]},
            {"kind": "tool_call", "calls": [{"name": "get_directions",
                                             "arguments": {"place_id": "place-1", "mode": "drive"}}]},
            {"kind": "finish", "summary": "distance km: 0.19"},
        ]

    async def plan(self, request: PlanRequest) -> Any:
        queue = self.parent if "delegate" in request.kinds else self.child
        if queue is self.child and queue and queue[0]["kind"] == "tool_call" \
                and queue[0]["calls"][0]["name"] not in {t.name for t in request.tools}:
            queue[:] = [{"kind": "refuse", "reason": "no tool to look the place up"}]
        if not queue:
            raise PlannerBackendError("script ended")
        self._items, self._next = [ACTION_ADAPTER.validate_python(queue.pop(0))], 0
        return await super().plan(request)


@pytest.fixture(scope="module")
def kit():  # noqa: ANN201
    return load_harness_kit()


def test_the_variants_count_passes_and_equipped_children_and_resume(kit, tmp_path):
    out = tmp_path / "handoff.json"
    argv = ["--tasks", str(SUITE), "--split", "dev", "--task-id", TASK, "--out", str(out),
            "--variants", "off", "on", "no-app_tools+app_lookups", "no-grounded_artifacts", "--trace-dir", str(tmp_path / "t")]
    with bench_script("bench_handoff") as bench:
        assert bench.main(argv, planner_for=lambda task, name: Competent(), kit=kit) == 0
        report = json.loads(out.read_text())
        v = report["variants"]
        assert (v["on"]["passed"], v["on"]["children"], v["on"]["equipped"], v["on"]["confirmed"]) == (1, 1, 1, 1)
        assert v["on"]["dropped"] == 1 and v["on"]["stops"] == {"finish": 1}
        assert (v["off"]["passed"], v["off"]["equipped"], v["off"]["dropped"]) == (0, 0, 0)
        assert (v["no-app_tools+app_lookups"]["passed"], v["no-app_tools+app_lookups"]["equipped"]) == (0, 0)
        assert v["no-grounded_artifacts"]["dropped"] == 0 and v["no-grounded_artifacts"]["equipped"] == 1
        assert (tmp_path / "t" / "on").is_dir()

        def never(task: Any, name: str) -> Any:
            raise AssertionError("a resumed run redid a finished one")

        assert bench.main([*argv, "--resume"], planner_for=never, kit=kit) == 0
        assert json.loads(out.read_text())["variants"]["on"]["rows"] == v["on"]["rows"]
        assert bench.main([*argv[:6], "--variants", "on", "--resume"], planner_for=never, kit=kit) == 2  # no --out
        fresh = tmp_path / "none.json"  # --resume before anything finished starts from the beginning
        assert bench.main([*argv[:6], "--variants", "on", "--out", str(fresh), "--resume"],
                          planner_for=lambda task, name: Competent(), kit=kit) == 0
        ran = json.loads(fresh.read_text())["variants"]["on"]
        assert (ran["passed"], ran["confirmed"], [r["task"] for r in ran["rows"]]) == (1, 1, [TASK])
        with pytest.raises(SystemExit):
            bench.main([*argv[:6], "--variants", "no-nonsense"], planner_for=never, kit=kit)
