"""Train with CARE on TRL's ``GRPOTrainer`` without forking it (optional extra ``care-trl``).

Usage::

    from pocketpilot.trainer_bridge.care_trl import CareGRPOTrainer, CareSignals

    trainer = CareGRPOTrainer(
        model,
        signals=CareSignals(success=my_success, progress=my_progress, cost=my_cost),
        care=CareConfig(...),             # thresholds, weights, cost normalization
        controller=CareController(...),   # optional: bounded retuning every N steps
        args=GRPOConfig(...), train_dataset=..., processing_class=tokenizer,
    )
    trainer.train()

Each signal is an ordinary TRL reward function (``f(prompts, completions, completion_ids,
**columns) -> list[float]``): ``success`` returns verified 0/1, ``progress`` the share of
verifier criteria met (default: 0), ``cost`` the rollout's cost (default: completion tokens).

Where CARE hooks in, and why there. TRL 1.16 computes advantages inline in the private
``_generate_and_score_completions``; there is no advantage hook. Two ways in were weighed:

* **A reward function that returns CARE's advantage, with** ``scale_rewards="none"``: TRL then
  only subtracts the group mean, which is already 0, so the advantage passes through. No
  subclass, but the function only sees the completions of its own process (a group split across
  processes breaks it), TRL's logged "reward" becomes the advantage, and the σ_anchor floor
  hides inside a reward.
* **This subclass** (chosen): the three signals are registered as TRL reward functions (so TRL
  logs each one's mean and std); :meth:`_calculate_rewards` keeps the per-function rewards TRL
  has already *gathered across processes*, so every group is whole; after the parent has built
  the batch, its advantages are replaced by :func:`~pocketpilot.trainer_bridge.care.compute_care`
  on those rewards, sliced to this process. TRL's own (discarded) normalization costs
  microseconds. The price: two private method names, so the extra pins ``trl`` and an
  unexpected layout fails loudly (:class:`CareHookError`) instead of training with plain GRPO.

TRL's ``reward`` metric is set to the success rate (weights 1, 0, 0), and ``care/*`` metrics log
regime occupancy, floored groups and the current τ, λ.

This module imports without torch: ``CareGRPOTrainer`` is built on first access, and raises
:class:`CareExtraMissingError` with the install command when the extra is missing.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pocketpilot.errors import PocketPilotError, UsageError
from pocketpilot.trainer_bridge.care import CareResult, Regime, compute_care
from pocketpilot.trainer_bridge.care_config import CareConfig
from pocketpilot.trainer_bridge.care_controller import CareController

# CareGRPOTrainer is public too, but built lazily (module __getattr__); it stays out of __all__
# so that `from care_trl import *` works without the extra.
__all__ = [
    "CareExtraMissingError",
    "CareHookError",
    "CareSignals",
    "INSTALL_HINT",
    "require_trl",
]

logger = logging.getLogger(__name__)

INSTALL_HINT = (
    "pip install torch==2.13.0 (CPU build; install it first) && pip install 'pocketpilot[care-trl]'"
)
_REQUIRED = ("torch", "transformers", "trl")

RewardFunc = Callable[..., Sequence[float | None]]


class CareExtraMissingError(PocketPilotError, ImportError):
    """torch / transformers / trl are not installed; they are the optional ``care-trl`` extra."""

    def __init__(self, missing: list[str]) -> None:
        super().__init__(f"CARE on TRL needs {', '.join(missing)}, not installed: {INSTALL_HINT}")
        self.missing = missing


class CareHookError(PocketPilotError, RuntimeError):
    """The installed TRL no longer calls the methods CARE hooks into (see the module docstring)."""


def require_trl() -> None:
    """Raise :class:`CareExtraMissingError` unless torch, transformers and trl are importable."""
    missing = [name for name in _REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        raise CareExtraMissingError(missing)


@dataclass(frozen=True)
class CareSignals:
    """The three per-rollout signals CARE needs, each a TRL reward function.

    Attributes:
        success: verified success, 0 or 1, per completion.
        progress: verified progress in [0, 1]; ``None`` means 0 (progress shaping then has
            nothing to add, and low-success groups learn from success alone).
        cost: non-negative cost; ``None`` means the completion length in tokens.
    """

    success: RewardFunc
    progress: RewardFunc | None = None
    cost: RewardFunc | None = None

    def reward_funcs(self) -> list[Callable[..., list[float | None]]]:
        """The signals as three named TRL reward functions, in the order success, progress, cost."""
        return [
            _named(self.success, "care_success"),
            _named(self.progress or _zero_progress, "care_progress"),
            _named(self.cost or _completion_tokens, "care_cost"),
        ]


def _zero_progress(prompts: list[Any], **_: Any) -> list[float]:
    return [0.0] * len(prompts)


def _completion_tokens(completion_ids: list[list[int]], **_: Any) -> list[float]:
    return [float(len(ids)) for ids in completion_ids]


def _named(fn: RewardFunc, name: str) -> Callable[..., list[float | None]]:
    def reward(**kwargs: Any) -> list[float | None]:
        return list(fn(**kwargs))

    # TRL names metrics after __name__ ("rewards/care_success/mean").
    reward.__name__ = reward.__qualname__ = name
    return reward


_TRAINER_CLASS: type | None = None


def __getattr__(name: str) -> Any:
    # PEP 562: build the subclass only when asked for, so importing this module needs no torch.
    if name == "CareGRPOTrainer":
        return _trainer_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _trainer_class() -> type:
    global _TRAINER_CLASS
    if _TRAINER_CLASS is None:
        require_trl()
        _TRAINER_CLASS = _build_trainer_class()
    return _TRAINER_CLASS


def _build_trainer_class() -> type:
    import torch
    from trl import GRPOTrainer

    for method in ("_calculate_rewards", "_generate_and_score_completions"):
        if not callable(getattr(GRPOTrainer, method, None)):
            raise CareHookError(f"trl.GRPOTrainer has no {method}(); this trl version is not supported")

    class CareGRPOTrainer(GRPOTrainer):  # type: ignore[misc, valid-type]
        """``trl.GRPOTrainer`` whose advantages are CARE's (regime rewards + σ_anchor floor).

        Args:
            model: as for ``GRPOTrainer``.
            signals: success / progress / cost reward functions (:class:`CareSignals`).
            care: CARE settings; defaults to ``CareConfig()``.
            controller: optional :class:`CareController`; its params are used and it observes
                every training batch. Report dev-set results with ``controller.record_dev``.
            **kwargs: passed to ``GRPOTrainer`` (``args``, ``train_dataset``,
                ``processing_class``, ...), except ``reward_funcs``, which CARE owns.

        Raises:
            UsageError: ``reward_funcs`` passed, or ``args.reward_weights`` set.
        """

        def __init__(
            self,
            model: Any,
            signals: CareSignals,
            care: CareConfig | None = None,
            controller: CareController | None = None,
            **kwargs: Any,
        ) -> None:
            if "reward_funcs" in kwargs:
                raise UsageError("CareGRPOTrainer builds reward_funcs from `signals`; do not pass reward_funcs")
            args = kwargs.get("args")
            if args is not None and getattr(args, "reward_weights", None) is not None:
                raise UsageError("CareGRPOTrainer sets reward weights itself; leave args.reward_weights unset")
            self.care_config = care or CareConfig()
            self.care_controller = controller
            self.care_last_result: CareResult | None = None
            self._care_rewards: Any = None
            super().__init__(model, reward_funcs=signals.reward_funcs(), **kwargs)
            # TRL's logged "reward" = success rate; its own advantages are replaced below.
            self.reward_weights = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float32)

        @property
        def care_params(self) -> Any:
            """The CARE params in force (the controller's, when there is one)."""
            if self.care_controller is not None:
                return self.care_controller.params
            return self.care_config.params

        def _calculate_rewards(self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any) -> Any:
            rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self._care_rewards = rewards_per_func  # already gathered across processes: whole groups
            return rewards_per_func

        def _generate_and_score_completions(self, inputs: Any) -> Any:
            self._care_rewards = None
            output = super()._generate_and_score_completions(inputs)
            if self._care_rewards is None:
                raise CareHookError("GRPOTrainer did not call _calculate_rewards; this trl version is not supported")
            mode = "train" if self.model.training else "eval"
            step = self.state.global_step
            if mode == "train" and self.care_controller is not None:
                # Decide first, so this batch already uses what the statistics so far call for.
                self.care_controller.maybe_update(step)
            group_size = self.num_generations if mode == "train" else self.num_generations_eval
            values = self._care_rewards.detach().to("cpu", torch.float64).numpy()
            result = compute_care(
                values[:, 0], values[:, 1], values[:, 2],
                group_size=group_size, config=self.care_config, params=self.care_params,
            )
            local = output["advantages"]
            start = self.accelerator.process_index * local.shape[0]
            output["advantages"] = torch.as_tensor(
                result.advantages[start : start + local.shape[0]], dtype=local.dtype, device=local.device
            )
            self._care_log(mode, result)
            self.care_last_result = result
            if mode == "train" and self.care_controller is not None:
                self.care_controller.observe(step, result, update=False)
            return output

        def _care_log(self, mode: str, result: CareResult) -> None:
            # Replace the parent's logged advantages (the completions table) with the ones used.
            logged = self._logs["advantages"]
            for _ in range(min(len(logged), len(result.advantages))):
                logged.pop()
            logged.extend(result.advantages.tolist())
            occ = result.occupancy()
            metrics = self._metrics[mode]
            for regime in Regime:
                metrics[f"care/occupancy_{regime.name.lower()}"].append(occ[regime])
            metrics["care/floored_groups"].append(float(result.floored.mean()))
            for name, value in result.params.model_dump().items():
                metrics[f"care/{name}"].append(float(value))

    CareGRPOTrainer.__module__ = __name__
    return CareGRPOTrainer
