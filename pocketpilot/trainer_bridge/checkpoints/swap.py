"""Promote or roll back a version in the registry *and* in the planners running in this process.

Order matters for "the current version keeps serving": files are re-hashed against the
registry first (a tampered or truncated file never reaches llama.cpp), then every planner
swaps (each under its own generation lock, between steps), and only when all swapped does
the registry record the change. If one planner fails to load, the ones already swapped go
back to the previous version and the registry is left untouched.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from .errors import RegistryError
from .registry import ModelVersion, Registry

__all__ = ["ServingSwitch", "SwappablePlanner"]

logger = logging.getLogger(__name__)


@runtime_checkable
class SwappablePlanner(Protocol):
    """A planner that can change model between steps (``LlamaCppPlanner`` is one)."""

    async def swap_model(
        self, model_path: str | Path, *, lora_path: str | Path | None = None,
        sha256: str | None = None, quant_type: str | None = None,
    ) -> None:
        """Load the new files, then switch under the generation lock; raise and keep serving on failure."""
        ...


class ServingSwitch:
    """Keeps a set of running planners on the registry's serving version."""

    def __init__(self, registry: Registry, planners: Sequence[SwappablePlanner] = ()) -> None:
        self.registry = registry
        self.planners: list[SwappablePlanner] = list(planners)

    async def _swap_all(self, new: ModelVersion, old: ModelVersion | None) -> None:
        done: list[SwappablePlanner] = []
        try:
            for planner in self.planners:
                await _swap(planner, new)
                done.append(planner)
        except BaseException:
            if old is not None:
                for planner in done:
                    await _swap(planner, old)
            raise

    async def promote(self, version_id: str) -> ModelVersion:
        """Verify, swap every planner to ``version_id``, then record it as serving."""
        version = self.registry.get(version_id)
        if version.state == "rejected":
            raise RegistryError(f"{version_id} was rejected ({version.note}); it cannot serve")
        await asyncio.to_thread(self.registry.verify, version)
        await self._swap_all(version, self.registry.serving())
        return self.registry.promote(version_id)

    async def rollback(self, to: str | None = None) -> ModelVersion:
        """Verify the previous (or ``to``) version, swap every planner to it, then record the rollback."""
        target = self.registry.rollback_target(to)
        await asyncio.to_thread(self.registry.verify, target)
        await self._swap_all(target, self.registry.serving())
        new = self.registry.rollback(to)
        if new.id != target.id:  # another process changed the history meanwhile: follow the registry
            await self._swap_all(new, target)
        return new

    async def sync(self) -> ModelVersion | None:
        """Swap the planners to whatever the registry says is serving (another process promoted it)."""
        serving = self.registry.serving()
        if serving is not None:
            await asyncio.to_thread(self.registry.verify, serving)
            await self._swap_all(serving, None)
        return serving


async def _swap(planner: SwappablePlanner, version: ModelVersion) -> None:
    await planner.swap_model(
        version.model_path, lora_path=version.lora_path, sha256=version.model_sha256, quant_type=version.quant_type
    )
