"""evolve's decode memo: a candidate's rerun decodes only where its prompt differs; a resumed run keeps what was decoded."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from greedy_fakes import GreedyStandIn

from pocketpilot.contracts import Finish, PlannerTurn
from pocketpilot.evaluation.evolve import MEMO_FILE
from pocketpilot.harness.action_schema import parse_action
from pocketpilot.harness.base import PlannerOutput, PlanRequest
from pocketpilot.harness.planners.decode_memo import DecodeMemo, DecodeMemoError
from pocketpilot.tasks import TaskSpec, oracle_actions
from pocketpilot.tasks.loader import load_task
from pocketpilot.tasks.split_index import read_split_index
from pocketpilot.tracing.trace import read_trace

HERE = Path(__file__).parent
MINTS_IDS = ("delegate", "memory_search", "memory_write")
"""Actions whose result shows the planner an id minted this run (derived from the task in an episode)."""
HELP_TEXT = "Work through the request step by step."  # the help note of evolve_helpers.HelpNoteProposer
sys.path.insert(0, str(HERE))
import evolve_helpers as h  # noqa: E402


class Greedy(GreedyStandIn):
    """A greedy stand-in whose action is a function of the prompt: the task's oracle when the task
    "knows how" (its id hashes even) or when the help note is in the prompt, else an immediate finish.
    """

    def __init__(self, task: TaskSpec, decodes: list[str]) -> None:
        super().__init__()
        self.task, self.decodes = task, decodes

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        self.decodes.append(self.task.id)
        helped = any(HELP_TEXT in m.content for m in request.messages)
        knows = not h._odd(self.task.id) or helped
        step = sum(1 for m in request.messages if m.role == "assistant")
        script = oracle_actions(self.task) if knows else [Finish(summary="Done.")]
        raw = json.dumps(script[min(step, len(script) - 1)].model_dump(mode="json"))
        return PlannerOutput(action=parse_action(raw, request.tools, request.kinds),
                             turn=PlannerTurn(raw=raw, latency_s=1.0))


class Factory:
    def __init__(self) -> None:
        self.decodes: list[str] = []

    def __call__(self, task: TaskSpec, eta: Any) -> Greedy:
        return Greedy(task, self.decodes)


def _loop(out: Path, tasks: Path, factory: Factory, **kwargs: Any):  # type: ignore[no-untyped-def]
    from pocketpilot.evaluation.evolve import EvolveLoop, NoDistiller
    from pocketpilot.evaluation.evolve_state import EvolveSettings

    settings = EvolveSettings(tasks_dir=str(tasks), dev_sample=6, evolve_sample=6, seed=1)
    kwargs.setdefault("auto_approve", True)
    return EvolveLoop(out, settings, factory, base_eta=h.base_eta(), proposer=h.HelpNoteProposer(),
                      distiller=NoDistiller(), **kwargs)


def _decision(out: Path) -> dict:
    d = json.loads((out / "iter-01" / "decision.json").read_text())
    return {"measured": d["measured"], "accepted": d["accepted"]}


def _memo_steps(folder: Path) -> int:
    def count(episode: Any) -> int:
        return sum(int(s.planner is not None and s.planner.memo) + sum(count(c) for c in s.children)
                   for s in episode.steps)

    return sum(count(read_trace(trace)[0]) for trace in folder.glob("**/traces/*.jsonl"))


def test_a_candidate_is_served_where_its_prompts_did_not_change_and_decides_the_same(team_tasks: Path,
                                                                                     tmp_path: Path) -> None:
    on, off = Factory(), Factory()
    memo_loop = _loop(tmp_path / "on", team_tasks, on)
    asyncio.run(memo_loop.run(1))
    asyncio.run(_loop(tmp_path / "off", team_tasks, off, decode_memo=False).run(1))
    assert _decision(tmp_path / "on") == _decision(tmp_path / "off")  # the same runs, the same decision
    stats = memo_loop.memo.stats
    assert stats.hits > 0 and len(on.decodes) == stats.misses
    assert len(off.decodes) == len(on.decodes) + stats.hits  # each hit is a decode not made
    assert len(DecodeMemo(tmp_path / "on" / MEMO_FILE)) == len(on.decodes)
    assert _memo_steps(tmp_path / "on" / "iter-01" / "evolve") == stats.hits  # each served step says so
    assert not (tmp_path / "off" / MEMO_FILE).exists() and _memo_steps(tmp_path / "off") == 0


def test_a_resumed_measurement_decodes_nothing_again(team_tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = Factory()
    asyncio.run(_loop(out, team_tasks, first, auto_approve=False).run(1))
    decided = _decision(out)
    # killed after the candidate's episodes ran but before their outcomes and the decision were written
    (out / "iter-01" / "decision.json").unlink()
    for name in decided["measured"]:
        shutil.rmtree(out / "iter-01" / "evolve" / name)
    again = Factory()
    asyncio.run(_loop(out, team_tasks, again, auto_approve=False).run(1))
    assert _decision(out) == decided
    # every step is served, those after a delegation or a memory action included: the ids their
    # prompts show (a sub-agent's episode id, a memory's id) derive from the task, not drawn anew
    served, minted = 0, 0
    for name in decided["measured"]:
        for trace in (out / "iter-01" / "evolve" / name).glob("traces/*.jsonl"):
            episode = read_trace(trace)[0]
            minted += sum(1 for s in episode.steps if s.action is not None and s.action.kind in MINTS_IDS)
            for s in episode.steps:
                assert s.planner is None or s.planner.memo, (episode.header.task_id, s.index)
                served += sum(1 for c in s.children for cs in c.steps if cs.planner is not None and cs.planner.memo)
                served += int(s.planner is not None and s.planner.memo)
    assert served > 0 and minted > 0 and again.decodes == []


SUITE = HERE.parents[1] / "pocketpilot" / "tasks" / "suite"


def _dev_tasks(group: str, shows_ids: Callable[[TaskSpec], bool], n: int = 2) -> list[TaskSpec]:
    """The first ``n`` dev tasks of ``group`` (the suite's) whose oracle reaches a step that shows a minted id."""
    found = []
    for task_id in sorted(read_split_index(SUITE)["dev"]):
        task = load_task(SUITE / f"{task_id}.yaml", roots=(SUITE, SUITE.parent))
        if task.group == group and shows_ids(task):
            found.append(task)
            if len(found) == n:
                return found
    raise AssertionError(f"fewer than {n} dev tasks of {group} show an id")


@pytest.mark.parametrize("repeatable", [True, False])
def test_rerunning_identical_memory_and_sub_agent_tasks_decodes_nothing(tmp_path: Path, repeatable: bool) -> None:
    from pocketpilot.evaluation.task_episode import load_harness_kit, run_task_episode
    from pocketpilot.harness.planners.decode_memo import MemoPlanner

    # tasks the fake "knows how" to do (it follows their oracle), through a memory search or a delegation
    tasks = [*_dev_tasks("memory", lambda t: not h._odd(t.id) and any(s.memory_search for s in t.oracle)),
             *_dev_tasks("subagent", lambda t: not h._odd(t.id) and any(s.delegate for s in t.oracle))]
    from pocketpilot.adapters.placement import MemorySettings
    from pocketpilot.evaluation.task_episode import HarnessKit

    memo, kit = DecodeMemo(tmp_path / MEMO_FILE), load_harness_kit()
    # the search offered after a whole recall (by default withheld: the suite's histories go in whole)
    searching = MemorySettings.defaults().model_copy(update={"whole_closes_search": False})
    kit = HarnessKit(kit.library, eta=kit.eta.model_copy(update={"memory": searching}))

    async def run_all() -> list[str]:
        decodes: list[str] = []
        for task in tasks:
            await run_task_episode(task, MemoPlanner(Greedy(task, decodes), memo), kit=kit, repeatable=repeatable)
        return decodes

    first = asyncio.run(run_all())
    again = asyncio.run(run_all())
    assert set(first) == {t.id for t in tasks}
    if repeatable:
        assert again == []  # each step served: its prompt is the first run's, ids and times included
    else:  # drawn at random (and memories stamped by the wall clock), the steps after them decode again
        assert {t.group for t in tasks if t.id in again} == {"memory", "subagent"}


def test_a_corrupt_memo_fails_before_anything_runs(team_tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / MEMO_FILE).write_text("{not a record\n")
    with pytest.raises(DecodeMemoError):
        _loop(out, team_tasks, Factory())
    assert not (out / "eta.json").exists()


class _Finisher(Greedy):
    """Finishes at once whatever the task (the CLI's one planner for every task)."""

    def __init__(self) -> None:
        super().__init__(None, [])  # type: ignore[arg-type]

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        self.decodes.append("?")
        raw = json.dumps({"kind": "finish", "summary": "Done."})
        return PlannerOutput(action=parse_action(raw, request.tools, request.kinds), turn=PlannerTurn(raw=raw))


def test_the_cli_memoizes_by_default_and_not_with_no_decode_memo(team_tasks: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import pocketpilot.cli.evolve as evolve_cli
    from pocketpilot.cli.main import cli

    monkeypatch.setattr(evolve_cli, "build_planner", lambda *a, **k: _Finisher())
    base = ["evolve", "--tasks", str(team_tasks), "--dev-sample", "2", "--evolve-sample", "2", "--no-embedder",
            "--auto-approve", "--no-pull"]
    on = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "on")])
    off = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "off"), "--no-decode-memo"])
    assert on.exit_code == 0 and off.exit_code == 0, on.output + off.output
    assert len(DecodeMemo(tmp_path / "on" / MEMO_FILE)) > 0 and "decode memo:" in on.output
    assert not (tmp_path / "off" / MEMO_FILE).exists() and "decode memo:" not in off.output
