"""``bench/bench_tool_exposure.py``: retrieval settings on the whole phone, with a scripted planner.

The oracle of a multi-step dev task is replayed under each variant: the default (``fixed``'s
settings) must show one tool list for the whole run (the prompt's prefix survives) where
``state`` re-ranks it, the report must count what the steps recorded, and bad input is one line
and exit 2 before any planner exists.
"""

from __future__ import annotations

import json

import pytest
from bench_scripts import bench_script

from pocketpilot.evaluation.task_episode import load_harness_kit
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions

TASK = "skill-branch-bob-unread"


@pytest.fixture(scope="module")
def kit():  # noqa: ANN201
    return load_harness_kit()


def test_the_default_shows_one_tool_list_for_the_run_and_the_report_counts_it(kit, tmp_path, capsys):
    task = next(t for t in load_suite("dev") if t.id == TASK)
    planners: dict[str, ScriptedPlanner] = {}

    def planner_for(t, name):  # noqa: ANN001, ANN202
        planners[name] = ScriptedPlanner(oracle_actions(t))
        return planners[name]

    out = tmp_path / "exposure.json"
    with bench_script("bench_tool_exposure") as bench:
        rc = bench.main(["--task-id", TASK, "--variants", "default", "fixed", "state", "k4", "--out", str(out)],
                        planner_for=planner_for, kit=kit)
    assert rc == 0
    report = json.loads(out.read_text())
    assert list(report["variants"]) == ["default", "fixed", "state", "k4"]
    lists = {name: [tuple(t.name for t in r.tools) for r in p.requests] for name, p in planners.items()}
    assert len(lists["default"]) == len(oracle_actions(task)) >= 3
    assert len(set(lists["default"])) == 1 and lists["fixed"] == lists["default"]  # no step re-ranked the tools
    assert len(set(lists["state"])) > 1  # the control: the last results re-rank them
    assert len(lists["k4"][0]) < len(lists["default"][0])  # K = 4 against the default 24
    for name in ("default", "state"):
        v = report["variants"][name]
        row = v["rows"][0]
        assert row["task"] == TASK and row["success"] and v["passed"] == 1
        # the trace records the system prompt whenever the tool list changed
        assert row["system_prompts"] == 1 + sum(a != b for a, b in zip(lists[name], lists[name][1:], strict=False))
    assert "| state | 1/1 |" in capsys.readouterr().out


@pytest.mark.parametrize("variant", ["k0", "k999", "wide"])
def test_a_bad_variant_is_one_line_and_exit_2_before_any_planner(kit, variant, capsys):
    built: list[str] = []
    with bench_script("bench_tool_exposure") as bench, pytest.raises(SystemExit) as exc:
        bench.main(["--task-id", TASK, "--variants", variant],
                   planner_for=lambda t, n: built.append(n), kit=kit)  # type: ignore[func-returns-value]
    assert exc.value.code == 2 and not built
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert variant in err[-1]


def test_every_run_starts_with_the_planner_cache_forgotten(kit, tmp_path):
    task = next(t for t in load_suite("dev") if t.id == TASK)
    events: list[str] = []

    class Forgetful(ScriptedPlanner):
        async def forget(self) -> None:
            events.append("forget")

        async def plan(self, request):  # noqa: ANN001, ANN201
            events.append("plan")
            return await super().plan(request)

    with bench_script("bench_tool_exposure") as bench:
        rc = bench.main(["--task-id", TASK, "--variants", "default", "fixed"],
                        planner_for=lambda t, n: Forgetful(oracle_actions(task)), kit=kit)
    assert rc == 0
    runs = "".join("F" if e == "forget" else "p" for e in events).split("F")[1:]
    assert len(runs) == 2 and all(runs)  # forgotten once before each variant's run, never mid-run
