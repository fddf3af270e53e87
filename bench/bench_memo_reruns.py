r"""Steps a rerun of identical tasks still decodes under the decode memo, by group (issue 36; no model).

A greedy planner's rerun of a task under the same η should be served whole from the decode
memo (:mod:`pocketpilot.harness.planners.decode_memo`): every prompt repeats. Any step it decodes
again read something that differs between two runs of the same task (an id drawn at random, a
wall-clock time). This runs the evolve split's sample (as ``pocketpilot evolve``'s first
iteration draws it) twice, through one memo, with a stand-in planner whose
action is a function of its prompt (the task's oracle, the sub-agent's part of it in a
sub-agent's prompt), and prints, per group, the planner steps of the second pass and how many of
them it decoded. ``--unseeded`` runs the episodes as before issue 36's repeatable episodes
(ids drawn at random, memories stamped by the wall clock): the figure to compare with. No model
is loaded, so no lock is needed::

    .venv/bin/python bench/bench_memo_reruns.py --tasks pocketpilot/tasks/suite --sample 40
    .venv/bin/python bench/bench_memo_reruns.py --tasks pocketpilot/tasks/suite --sample 40 --unseeded
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pocketpilot.contracts import Action, Episode, PlannerInfo, PlannerTurn, SamplerSettings, digest  # noqa: E402
from pocketpilot.evaluation.evolve import stratified_sample  # noqa: E402
from pocketpilot.evaluation.task_episode import Mode, load_harness_kit, run_task_episode  # noqa: E402
from pocketpilot.harness.action_schema import parse_action  # noqa: E402
from pocketpilot.harness.base import PlannerOutput, PlanRequest  # noqa: E402
from pocketpilot.harness.planners.decode_memo import DecodeMemo, MemoPlanner  # noqa: E402
from pocketpilot.tasks import TaskSpec  # noqa: E402
from pocketpilot.tasks.oracle import _action  # noqa: E402
from pocketpilot.tasks.split_index import load_split_tasks  # noqa: E402


class PromptOracle:
    """A greedy stand-in: the action is a function of the prompt alone, and vouches for it.

    The script is the task's oracle, or, in a sub-agent's prompt (one whose messages hold a
    delegation's instruction), that delegation's own steps; the position is the number of
    assistant turns the prompt shows.
    """

    def __init__(self, task: TaskSpec, decodes: Counter[str]) -> None:
        self.task, self.decodes = task, decodes
        self.info = PlannerInfo(backend="fake", model="fake.gguf", model_sha256="f" * 64, sampler=SamplerSettings())

    def count_tokens(self, text: str) -> int:
        """Four characters a token, as the scripted planner counts."""
        return max(1, len(text) // 4)

    async def load(self) -> None:
        """Nothing to load."""

    async def aclose(self) -> None:
        """Nothing to release."""

    def decode_identity(self, request: PlanRequest) -> dict[str, Any]:
        """The prompt: the output is a function of it."""
        return {"prompt": digest([m.model_dump(mode="json") for m in request.messages])}

    def _script(self, request: PlanRequest) -> list[Action]:
        for step in self.task.oracle:
            d = step.delegate
            if d is not None and any(m.role == "user" and m.content.startswith(d.instruction) for m in request.messages):
                return [_action(s) for s in d.steps]
        return [_action(s) for s in self.task.oracle]

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        """The script's action at the prompt's position (its last one past the end)."""
        self.decodes[self.task.id] += 1
        script = self._script(request)
        step = sum(1 for m in request.messages if m.role == "assistant")
        raw = json.dumps(script[min(step, len(script) - 1)].model_dump(mode="json"))
        return PlannerOutput(action=parse_action(raw, request.tools, request.kinds),
                             turn=PlannerTurn(raw=raw, latency_s=1.0))


def planner_steps(episode: Episode) -> int:
    """Planner turns of ``episode``, its sub-agents' included."""
    return sum(int(s.planner is not None) + sum(planner_steps(c) for c in s.children) for s in episode.steps)


async def measure(tasks: list[TaskSpec], memo: DecodeMemo, mode: Mode = "harness",
                  repeatable: bool = True) -> tuple[dict[str, int], dict[str, int]]:
    """Run ``tasks`` twice; the second pass's planner steps and decodes, by group."""
    kit = load_harness_kit()
    steps: Counter[str] = Counter()
    decoded: Counter[str] = Counter()
    for rerun in (False, True):
        decodes: Counter[str] = Counter()
        for task in tasks:
            planner = MemoPlanner(PromptOracle(task, decodes), memo)
            episode, _ = await run_task_episode(task, planner, mode=mode, kit=kit, repeatable=repeatable)
            if rerun:
                steps[task.group] += planner_steps(episode)
                decoded[task.group] += decodes[task.id]
    return dict(steps), dict(decoded)


def main(argv: list[str] | None = None) -> int:
    """Print the second pass's decoded steps by group, and in total."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=Path, default=Path(__file__).resolve().parents[1] / "pocketpilot" / "tasks" / "suite")
    parser.add_argument("--sample", type=int, default=40, help="evolve tasks (stratified, as evolve draws them)")
    parser.add_argument("--key", default="0:1:evolve", help="the sample's key (evolve's: seed:iteration:evolve)")
    parser.add_argument("--mode", choices=["harness", "bare"], default="harness")
    parser.add_argument("--unseeded", action="store_true", help="random ids and the wall clock (the earlier episodes)")
    args = parser.parse_args(argv)
    tasks = stratified_sample(load_split_tasks(args.tasks, ("evolve",))["evolve"], args.sample, args.key)
    with tempfile.TemporaryDirectory() as tmp:
        memo = DecodeMemo(Path(tmp) / "decode-memo.jsonl")
        steps, decoded = asyncio.run(measure(tasks, memo, args.mode, repeatable=not args.unseeded))
    print(f"{'group':<14} {'steps':>6} {'decoded':>8}")
    for group in sorted(steps):
        print(f"{group:<14} {steps[group]:>6} {decoded.get(group, 0):>8}")
    print(f"{'total':<14} {sum(steps.values()):>6} {sum(decoded.values()):>8}   ({len(tasks)} tasks, {args.mode}, "
          f"{'unseeded' if args.unseeded else 'repeatable'}, load average {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
