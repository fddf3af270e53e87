"""Planner factories for rollouts: one call per episode, picklable so Ray can ship them.

A factory is called with ``(task, index)`` for every episode. The scripted factory returns a
fresh replay of the task's oracle, cut short at random for a configurable share of episodes so
groups hold both successes and failures (what GRPO needs to learn anything). The llama.cpp
factory keeps one planner per process — each Ray actor loads its own model once — and hands
the same instance to each episode it runs (episodes in one worker run one after another).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ...contracts import Finish, SamplerSettings
from ...harness import Planner
from ...harness.planners import ScriptedPlanner
from ...tasks import TaskSpec, oracle_actions

__all__ = ["LlamaPlannerFactory", "PlannerFactory", "ScriptedPlannerFactory"]


@runtime_checkable
class PlannerFactory(Protocol):
    """Makes the planner for one episode; ``aclose`` releases what it keeps between episodes."""

    def __call__(self, task: TaskSpec, index: int) -> Planner:
        """The planner for rollout ``index`` of ``task``."""
        ...

    async def aclose(self) -> None:
        """Release models or connections held across episodes."""
        ...


@dataclass(frozen=True)
class ScriptedPlannerFactory:
    """Oracle replays; with probability ``failure_rate`` an episode stops early with a false finish.

    Deterministic per ``(seed, task, index)``, so a rerun reproduces the same groups.
    """

    failure_rate: float = 0.0
    seed: int = 0

    def __call__(self, task: TaskSpec, index: int) -> Planner:
        """A scripted planner for this episode."""
        actions: list[Any] = list(oracle_actions(task))
        rng = random.Random(f"{self.seed}:{task.id}:{index}")
        if actions and rng.random() < self.failure_rate:
            keep = rng.randrange(len(actions))
            actions = [*actions[:keep], Finish(summary="stopped early (scripted failure)")]
        return ScriptedPlanner(actions, name=f"scripted-oracle-fail{self.failure_rate:g}")

    async def aclose(self) -> None:
        """Nothing kept between episodes."""


@dataclass
class LlamaPlannerFactory:
    """One in-process llama.cpp planner per process (per Ray actor), shared by its episodes."""

    model_path: Path
    lora_path: Path | None = None
    sampler: SamplerSettings = field(default_factory=lambda: SamplerSettings(temperature=0.7))
    n_ctx: int = 8192
    _planner: Any = field(default=None, init=False, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_planner"] = None  # a loaded model never travels; each actor loads its own
        return state

    def __call__(self, task: TaskSpec, index: int) -> Planner:
        """The process's planner (created on first use; the model loads on its first step)."""
        if self._planner is None:
            from ...harness.planners import LlamaCppPlanner

            self._planner = LlamaCppPlanner(self.model_path, lora_path=self.lora_path, sampler=self.sampler,
                                            n_ctx=self.n_ctx)
        planner: Planner = self._planner
        return planner

    async def aclose(self) -> None:
        """Free the model."""
        if self._planner is not None:
            await self._planner.aclose()
            self._planner = None
