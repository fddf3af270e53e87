"""Promote or roll back a version in the registry *and* in the planners running in this process.

Order matters for "the current version keeps serving": files are re-hashed against the
registry first (a tampered or truncated file never reaches llama.cpp), then every planner
swaps (each under its own generation lock, between steps), and only when all swapped does
the registry record the change. If one planner fails to load, or the registry then refuses
the change (a file changed meanwhile, a gate record says no), the planners already swapped go
back to the previous version and the registry is left untouched. The promotion rule
(:mod:`.promotion`) is checked before any planner loads anything.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from .errors import PromotionRefusedError, RegistryError
from .promotion import check_force_reason
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

    async def _switch(self, new: ModelVersion, old: ModelVersion | None,
                      record: Callable[[], ModelVersion]) -> ModelVersion:
        """Swap the planners, then let the registry record it (re-hashing off the loop); undo if it refuses."""
        await self._swap_all(new, old)
        recorded = asyncio.ensure_future(asyncio.to_thread(record))
        try:
            return await asyncio.shield(recorded)
        except BaseException:
            if not recorded.done():  # cancelled mid-write: see where the registry ends up first
                await asyncio.wait({recorded})
            if (recorded.cancelled() or recorded.exception() is not None) and old is not None:
                await self._swap_all(old, None)
            raise

    async def promote(self, version_id: str, *, force_reason: str | None = None) -> ModelVersion:
        """Check the promotion rule, verify, swap every planner to ``version_id``, then record it as serving."""
        reason = check_force_reason(force_reason)
        version = self.registry.get(version_id)
        if version.state == "rejected":
            raise RegistryError(f"{version_id} was rejected ({version.note}); it cannot serve")
        blockers = self.registry.promotion_blockers(version_id)
        if blockers and reason is None:
            raise PromotionRefusedError(version_id, blockers)
        await asyncio.to_thread(self.registry.verify, version)
        return await self._switch(version, self.registry.serving(),
                                  lambda: self.registry.promote(version_id, force_reason=reason))

    async def rollback(self, to: str | None = None) -> ModelVersion:
        """Verify the previous (or ``to``) version, swap every planner to it, then record the rollback."""
        target = self.registry.rollback_target(to)
        await asyncio.to_thread(self.registry.verify, target)
        new = await self._switch(target, self.registry.serving(), lambda: self.registry.rollback(to))
        if new.id != target.id:  # another process changed the history meanwhile: follow the registry
            await asyncio.to_thread(self.registry.verify, new)
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
