"""Executable tasks on the sandbox phone or a world a task brings: the spec format, the loader,
the worlds, and the verifier blocks.

Use::

    from pocketpilot.tasks import load_suite, prepare
    for task in load_suite("dev"):
        phone, executor, verifier = prepare(task)
        episode = await session.run(task.goal)  # the harness, with ``executor``
        verdict = await verifier(episode)
"""

from __future__ import annotations

from .loader import (
    build_state,
    build_world,
    check_splits,
    check_task,
    exposed_tools,
    load_suite,
    load_task,
    parse_task,
)
from .memory_seed import TASK_USER, TaskMemory, open_task_memory, prior_conversation
from .oracle import oracle_actions, run_actions, run_oracle
from .run import TaskRun, prepare
from .spec import (
    ActionCountCriterion,
    ActionOrderCriterion,
    ActionPattern,
    AnswerCriterion,
    CallCriterion,
    CallPattern,
    Capability,
    CheckCriterion,
    CountCriterion,
    Criterion,
    DelegateCriterion,
    DelegateStep,
    DelegationOrderCriterion,
    DelegationPattern,
    EitherCriterion,
    Group,
    LastCallCriterion,
    MemorySeed,
    NoCallCriterion,
    NoErrorCriterion,
    NoParentCallCriterion,
    NumberInTextCriterion,
    OracleStep,
    OrderCriterion,
    Split,
    StateCriterion,
    StopCriterion,
    TaskSpec,
    UnchangedCriterion,
    WorldSpec,
)
from .verify import check_criterion, matches, verify
from .world import ModelWorld, Phone, SandboxWorld, TaskWorld, World, WorldExecutor

__all__ = [
    "TASK_USER",
    "ActionCountCriterion",
    "ActionOrderCriterion",
    "ActionPattern",
    "AnswerCriterion",
    "CallCriterion",
    "CallPattern",
    "Capability",
    "CheckCriterion",
    "CountCriterion",
    "Criterion",
    "DelegateCriterion",
    "DelegateStep",
    "DelegationOrderCriterion",
    "DelegationPattern",
    "EitherCriterion",
    "Group",
    "LastCallCriterion",
    "MemorySeed",
    "ModelWorld",
    "NoCallCriterion",
    "NoErrorCriterion",
    "NoParentCallCriterion",
    "NumberInTextCriterion",
    "OracleStep",
    "OrderCriterion",
    "Phone",
    "SandboxWorld",
    "Split",
    "StateCriterion",
    "StopCriterion",
    "TaskMemory",
    "TaskRun",
    "TaskSpec",
    "TaskWorld",
    "UnchangedCriterion",
    "World",
    "WorldExecutor",
    "WorldSpec",
    "build_state",
    "build_world",
    "check_criterion",
    "check_splits",
    "check_task",
    "exposed_tools",
    "load_suite",
    "load_task",
    "matches",
    "open_task_memory",
    "oracle_actions",
    "parse_task",
    "prepare",
    "prior_conversation",
    "run_actions",
    "run_oracle",
    "verify",
]
