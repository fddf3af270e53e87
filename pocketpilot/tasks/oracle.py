"""Replay a task's oracle: proof (for tests) that its criteria can be met, and a scripted demo.

The oracle is one known-good action sequence stored in the task file. It never reaches a
planner's context; tests use it to show every bundled task is satisfiable, and a
``ScriptedPlanner`` can replay :func:`oracle_actions` for a model-free end-to-end run.
"""

from __future__ import annotations

import asyncio
import uuid

from ..contracts import (
    Action,
    AskUser,
    Delegate,
    Episode,
    EpisodeHeader,
    Finish,
    MemorySearch,
    PlannerInfo,
    Refuse,
    Step,
    ToolCall,
    ToolCallAction,
    digest,
)
from .run import TaskRun, prepare
from .spec import OracleStep, TaskSpec

__all__ = ["oracle_actions", "run_actions", "run_oracle"]


def _action(step: OracleStep) -> Action:
    if step.memory_search is not None:
        return MemorySearch(query=step.memory_search)
    if step.delegate is not None:
        d = step.delegate
        return Delegate(instruction=d.instruction, tools=d.tools, artifacts=d.artifacts)
    if step.call is not None:
        return ToolCallAction(calls=[ToolCall(name=step.call, arguments=step.args)])
    if step.batch is not None:
        return ToolCallAction(calls=[ToolCall(name=p.tool, arguments=p.args) for p in step.batch])
    if step.finish is not None:
        return Finish(summary=step.finish)
    if step.ask_user is not None:
        return AskUser(question=step.ask_user)
    assert step.refuse is not None  # guaranteed by OracleStep's validator
    return Refuse(reason=step.refuse)


def _flatten(steps: list[OracleStep]) -> list[Action]:
    out: list[Action] = []
    for step in steps:
        out.append(_action(step))
        if step.delegate is not None:
            out.extend(_action(s) for s in step.delegate.steps)
    return out


def oracle_actions(task: TaskSpec) -> list[Action]:
    """The task's oracle as the action sequence one planner emits (empty if the task has none).

    A sub-agent runs on the same planner, so a delegation is followed by the sub-agent's own
    actions (ending with its finish) before the parent's next action: the order in which a
    :class:`~pocketpilot.harness.planners.ScriptedPlanner` is asked for them.
    """
    return _flatten(task.oracle)


async def run_actions(run: TaskRun, actions: list[Action], *, episode_id: str | None = None) -> Episode:
    """Apply ``actions`` to the run's executor without a planner and record an Episode.

    Calls of one tool_call action run concurrently, as the harness runs a batch. The episode
    stops on the first finish/ask_user/refuse (or with ``max_steps`` if none comes).
    """
    queue = list(actions)
    return await _replay(run, queue, run.task.goal, episode_id, child=False)


async def _replay(run: TaskRun, queue: list[Action], request: str, episode_id: str | None, *, child: bool) -> Episode:
    steps: list[Step] = []
    stop = None
    index = 0
    while queue:
        action = queue.pop(0)
        results = []
        children: list[Episode] = []
        if isinstance(action, ToolCallAction):
            results = list(await asyncio.gather(*(run.executor.call(c) for c in action.calls)))
        elif isinstance(action, Delegate) and not child:
            children = [await _replay(run, queue, action.instruction, None, child=True)]
        steps.append(
            Step(
                index=index,
                context_digest=digest(["oracle", index]),
                action=action,
                results=results,
                children=children,
            )
        )
        index += 1
        if isinstance(action, (Finish, AskUser, Refuse)):
            stop = action.kind
            break
    header = EpisodeHeader(
        episode_id=episode_id or uuid.uuid4().hex,
        request=request,
        task_id=None if child else run.task.id,
        planner=PlannerInfo(backend="scripted", model="oracle"),
        tools=run.executor.tools(),
    )
    return Episode(header=header, steps=steps, stop_reason=stop or "max_steps")


async def run_oracle(task: TaskSpec) -> tuple[Episode, TaskRun]:
    """Prepare ``task`` and replay its oracle; the caller awaits ``run.verifier(episode)``."""
    run = prepare(task)
    episode = await run_actions(run, oracle_actions(task))
    return episode, run
