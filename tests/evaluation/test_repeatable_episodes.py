"""Two episodes of the same task show the planner byte-identical prompts at every step.

The ids a prompt shows (a memory search's hits, a delegation's sub-agent episode) derive from
the task and the mode, and the episode's store stamps memories on the world's clock; the
episode's own id (its trace file's name) stays random. Unseeded, the prompts differ.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pocketpilot.adapters.placement import MemorySettings
from pocketpilot.contracts import Episode
from pocketpilot.evaluation.task_episode import HarnessKit, load_harness_kit, run_task_episode
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import TaskSpec, oracle_actions
from pocketpilot.tasks.loader import load_task
from pocketpilot.tasks.split_index import read_split_index

SUITE = Path(__file__).resolve().parents[2] / "pocketpilot" / "tasks" / "suite"


def _dev_task(group: str, shows_ids: Callable[[TaskSpec], bool]) -> TaskSpec:
    """The first dev task of ``group`` whose oracle reaches a step that shows a minted id."""
    for task_id in sorted(read_split_index(SUITE)["dev"]):
        task = load_task(SUITE / f"{task_id}.yaml", roots=(SUITE, SUITE.parent))
        if task.group == group and shows_ids(task):
            return task
    raise AssertionError(f"no dev task of {group} shows an id")


@pytest.fixture(scope="module")
def kits() -> dict[str, HarnessKit]:
    """The bundled kit, and for the memory tasks one that offers memory_search after a whole recall.

    By default (``MemorySettings.defaults()``) a recall of the owner's whole history withholds the
    search, and the suite's memory histories all go in whole: no memory id would reach a prompt.
    """
    kit = load_harness_kit()
    searching = MemorySettings.defaults().model_copy(update={"whole_closes_search": False})
    return {"memory": HarnessKit(kit.library, eta=kit.eta.model_copy(update={"memory": searching})),
            "subagent": kit}


@pytest.fixture(scope="module")
def tasks() -> dict[str, TaskSpec]:
    return {
        "memory": _dev_task("memory", lambda t: any(s.memory_search for s in t.oracle)),
        "subagent": _dev_task("subagent", lambda t: any(s.delegate for s in t.oracle)),
    }


async def _run(task: TaskSpec, kit, mode: str, trace_dir: Path, **kw) -> tuple[list[str], Episode]:
    planner = ScriptedPlanner(oracle_actions(task))
    episode, _ = await run_task_episode(task, planner, mode=mode, kit=kit, trace_dir=trace_dir, **kw)  # type: ignore[arg-type]
    return [r.model_dump_json() for r in planner.requests], episode


def _traces(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.jsonl"))


def _minted(episode: Episode) -> list[str]:
    """The ids the run minted that a later prompt may show: its memories' and its sub-agents' episodes'."""
    return [*(m.id for s in episode.steps for m in s.retrieved), *(c.header.episode_id for s in episode.steps
                                                                   for c in s.children)]


@pytest.mark.parametrize("mode", ["harness", "bare"])
@pytest.mark.parametrize("group", ["memory", "subagent"])
async def test_two_episodes_of_a_task_show_the_same_prompts(tasks, kits, group: str, mode: str, tmp_path: Path) -> None:
    task, kit = tasks[group], kits[group]
    first, one = await _run(task, kit, mode, tmp_path)
    second, two = await _run(task, kit, mode, tmp_path)
    assert len(first) > 1 and first == second  # byte-identical, step by step
    assert one.header.episode_id != two.header.episode_id  # the trace files' names stay unique
    assert len(_traces(tmp_path)) == 2
    if mode == "harness" or group == "subagent":
        minted = _minted(one)
        assert minted and minted == _minted(two)
        assert any(i in prompt for i in minted for prompt in first)  # the prompts do show them


@pytest.mark.parametrize("group", ["memory", "subagent"])
async def test_unseeded_episodes_show_other_ids(tasks, kits, group: str, tmp_path: Path) -> None:
    first, one = await _run(tasks[group], kits[group], "harness", tmp_path, repeatable=False)
    second, two = await _run(tasks[group], kits[group], "harness", tmp_path, repeatable=False)
    assert first[0] == second[0] and first != second
    assert not set(_minted(one)) & set(_minted(two))
