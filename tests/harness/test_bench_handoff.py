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


class Retries(ScriptedPlanner):
    """The parent sends the recorded delegate three times; each child, without the lookup, refuses the same way."""

    def __init__(self) -> None:
        super().__init__([])
        self.parent = [*[Competent().parent[0]] * 3, {"kind": "finish", "summary": "could not"}]

    async def plan(self, request: PlanRequest) -> Any:
        step = self.parent.pop(0) if "delegate" in request.kinds and self.parent else \
            {"kind": "refuse", "reason": "no tool to look the place up"}
        self._items, self._next = [ACTION_ADAPTER.validate_python(step)], 0
        return await super().plan(request)


def _never(task: Any, name: str) -> Any:
    raise AssertionError("a run started")


def test_policy_param_reaches_the_sessions_policy_and_the_meta(kit, tmp_path):
    from pocketpilot.tracing.trace import read_trace

    out = tmp_path / "hold.json"
    argv = ["--tasks", str(SUITE), "--split", "dev", "--task-id", TASK, "--variants", "off", "--out", str(out),
            "--trace-dir", str(tmp_path / "t"), "--policy-param", "repeat_delegation.unconfirmed=true"]
    with bench_script("bench_handoff") as bench:
        held = bench.with_policy_params(kit, [bench.policy_param("repeat_delegation.unconfirmed=true")])
        entry = [p for p in held.eta.policies if p.name == "repeat_delegation"]
        assert [p.name for p in held.eta.policies] == [*(p.name for p in kit.eta.policies), "repeat_delegation"]
        assert [e.params for e in entry] == [{"unconfirmed": True}]
        assert [p.unconfirmed for p in held.eta.build_policies() if p.name == "repeat_delegation"] == [True]
        # a policy already in η's set keeps its place and its other parameters
        guard = bench.with_policy_params(kit, [bench.policy_param("loop_guard.fail_limit=5")])
        assert [p.name for p in guard.eta.policies] == [p.name for p in kit.eta.policies]
        before = next(p for p in kit.eta.policies if p.name == "loop_guard")
        assert next(p for p in guard.eta.policies if p.name == "loop_guard").params == {**before.params, "fail_limit": 5}

        assert bench.main(argv, planner_for=lambda task, name: Retries(), kit=kit) == 0
        report = json.loads(out.read_text())
        assert report["meta"]["policy_params"] == {"repeat_delegation": {"unconfirmed": True}}
        row = report["variants"]["off"]["rows"][0]
        assert (row["delegations"], row["children"]) == (3, 2)  # the third, reproduced twice, was held
        headers = [read_trace(p)[0].header for p in sorted((tmp_path / "t" / "off").rglob("*.jsonl"))]
        parent = [h for h in headers if h.parent_episode_id is None]
        assert len(parent) == 1
        assert {"name": "repeat_delegation", "params": {"shown_chars": 400, "unconfirmed": True}} in parent[0].policies

        # without the parameter the same script runs all three
        plain = tmp_path / "plain.json"
        assert bench.main([*argv[:8], "--out", str(plain)], planner_for=lambda task, name: Retries(), kit=kit) == 0
        row = json.loads(plain.read_text())["variants"]["off"]["rows"][0]
        assert (row["delegations"], row["children"]) == (3, 3)
        assert "policy_params" not in json.loads(plain.read_text())["meta"]

        # a resume under the same parameters skips the finished run; under others it is refused
        assert bench.main([*argv, "--resume"], planner_for=_never, kit=kit) == 0
        assert bench.main([*argv[:-1], "repeat_delegation.unconfirmed=false", "--resume"],
                          planner_for=_never, kit=kit) == 2
        assert bench.main([*argv[:-2], "--resume"], planner_for=_never, kit=kit) == 2


@pytest.mark.parametrize(("param", "says"), [
    ("no_such_policy.unconfirmed=true", "unknown policy"),
    ("repeat_delegation.bogus=1", "takes no parameter 'bogus'"),
    ("gates.anything=1", "takes no parameter"),
    ("repeat_delegation.unconfirmed=yes", "unconfirmed must be true or false"),
    ("repeat_delegation.shown_chars=-1", "shown_chars must be >= 0"),
    ("repeat_delegation.unconfirmed", "expected NAME.KEY=VALUE"),
    ("repeat_delegation=true", "expected NAME.KEY=VALUE"),
    ("Repeat.x=1", "expected NAME.KEY=VALUE"),
    ("repeat_delegation.=1", "expected NAME.KEY=VALUE"),
])
def test_a_bad_policy_param_is_one_line_and_exit_2_before_any_model(kit, capsys, monkeypatch, param, says):
    with bench_script("bench_handoff") as bench:
        monkeypatch.setattr(bench, "_llama", lambda args, tasks: pytest.fail("the model loaded"))
        argv = ["--tasks", str(SUITE), "--split", "dev", "--task-id", TASK, "--no-embedder", "--policy-param", param]
        assert bench.main(argv, kit=kit) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and says in err, err
