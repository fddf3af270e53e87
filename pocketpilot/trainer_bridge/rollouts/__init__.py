"""Collect G rollouts per task on many sandbox phones, in process or over Ray actors."""

from .collect import EpisodeResult, RolloutReport, collect_local, collect_rollouts, write_groups
from .planners import LlamaPlannerFactory, PlannerFactory, ScriptedPlannerFactory
from .ray_pool import RayRolloutPool, RolloutWorker, collect_ray, ray_available

__all__ = [
    "EpisodeResult",
    "LlamaPlannerFactory",
    "PlannerFactory",
    "RayRolloutPool",
    "RolloutReport",
    "RolloutWorker",
    "ScriptedPlannerFactory",
    "collect_local",
    "collect_ray",
    "collect_rollouts",
    "ray_available",
    "write_groups",
]
