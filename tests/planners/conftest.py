"""Shared fixtures of the planner tests on the real model: the prompts they decode."""

from __future__ import annotations

import asyncio

import pytest

from pocketpilot.evaluation.compare import run_task
from pocketpilot.harness.base import PlanRequest
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite
from pocketpilot.tasks.oracle import oracle_actions

PROMPT_TASKS = ("settings-meeting-mode", "clarify-text-him")  # dev tasks: tests cite no test-split task


async def _recorded(mode: str) -> list[PlanRequest]:
    """A first and a later step of the two tasks, as the session assembles them in ``mode`` from their oracle runs."""
    out: list[PlanRequest] = []
    for task in load_suite():
        if task.id in PROMPT_TASKS:
            scripted = ScriptedPlanner(oracle_actions(task))
            await run_task(task, scripted, mode=mode)
            out += scripted.requests[:2]
    return out


@pytest.fixture(scope="session")
def harness_prompts() -> list[PlanRequest]:
    """The prompts of :func:`_recorded` in harness mode (its rules, skills and policies in the prefix)."""
    return asyncio.run(_recorded("harness"))


@pytest.fixture(scope="session")
def bare_prompts() -> list[PlanRequest]:
    """The prompts of :func:`_recorded` in bare mode."""
    return asyncio.run(_recorded("bare"))
