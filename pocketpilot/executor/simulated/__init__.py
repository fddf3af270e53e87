"""The LLM-simulated backend: long-tail tools answered by a local model, verified before use."""

from __future__ import annotations

from .consistency import (
    IdsExist,
    Invariant,
    MatchesState,
    Predicate,
    SimRecord,
    SimulationLog,
    check_result,
    collect_ids,
    resolve_path,
)
from .executor import SimulatedExecutor, SimulatedTool
from .model import LlamaCppResponseModel, ResponseModel, SimulationBackendError

__all__ = [
    "IdsExist",
    "Invariant",
    "LlamaCppResponseModel",
    "MatchesState",
    "Predicate",
    "ResponseModel",
    "SimRecord",
    "SimulatedExecutor",
    "SimulatedTool",
    "SimulationBackendError",
    "SimulationLog",
    "check_result",
    "collect_ids",
    "resolve_path",
]
