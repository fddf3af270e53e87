"""CARE rewards and GRPO advantages for batches of rollout groups, vectorized with numpy.

Per group of G rollouts of one task, the success rate s̄ picks a regime:

* **progress shaping** (s̄ < τ_low): ``r = success + λ_p · progress`` — a group that rarely
  succeeds has almost no success variance to learn from, so verified progress (the share of
  verifier criteria met) supplies a denser signal;
* **outcome consolidation** (τ_low ≤ s̄ ≤ τ_high): ``r = success`` — learn to be right;
* **efficiency refinement** (s̄ > τ_high): ``r = success − λ_e · ĉ`` with ĉ the normalized
  cost (see :data:`~pocketpilot.trainer_bridge.care_config.CostNormalization`) — the task is
  mastered, so learn to be cheap.

Advantages are GRPO's ``(r − mean_g) / std_g`` per group, with one change: in the efficiency
regime the normalizer is ``max(std_g, σ_anchor)``, σ_anchor = sqrt(τ_high·(1−τ_high)). Why: in
an all-success group the only reward variance is ``λ_e · ĉ``, so plain normalization divides
λ_e out again and hands tiny cost differences unit-scale advantages — the policy is pushed to
compress as hard as it is pushed to succeed. With the floor, such advantages are
``λ_e · (ĉ − mean ĉ) / σ_anchor``: they keep their dependence on λ_e and stay small.

Conventions: std is the population std (ddof=0), the one σ_anchor is defined with (the std of
a Bernoulli group at s̄ = τ_high). Outside the efficiency regime the normalizer is
``std + eps`` like plain GRPO. The floor also binds for a *mixed* efficiency group whose
reward std is below σ_anchor — with τ_high > 0.5 that is every group above the threshold,
since a Bernoulli std falls as s̄ → 1 — shrinking its advantages by ``std / σ_anchor`` while
keeping their signs and order; a group whose std already reaches σ_anchor is untouched.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pocketpilot.errors import ContractError, UsageError
from pocketpilot.trainer_bridge.care_config import CareConfig, CareParams

__all__ = ["CareResult", "Regime", "compute_care", "grpo_advantages"]

FloatArray = npt.NDArray[np.float64]


class Regime(enum.IntEnum):
    """The reward regime of one group (stored as int8 in :attr:`CareResult.regimes`)."""

    PROGRESS = 0
    OUTCOME = 1
    EFFICIENCY = 2


@dataclass(frozen=True)
class CareResult:
    """Rewards, advantages and per-group bookkeeping of one CARE computation.

    Per-rollout arrays have length N (the input order); per-group arrays have length N / G.
    """

    rewards: FloatArray
    advantages: FloatArray
    success_rate: FloatArray
    """s̄ per group."""
    regimes: npt.NDArray[np.int8]
    """:class:`Regime` value per group."""
    normalizer: FloatArray
    """The denominator used per group (``std + eps``, or ``max(std, σ_anchor)`` in efficiency)."""
    floored: npt.NDArray[np.bool_]
    """Groups whose normalizer is σ_anchor because their std was below it."""
    params: CareParams
    """The parameter values this result was computed with (the controller may change them later)."""

    @property
    def group_size(self) -> int:
        """G, rollouts per group."""
        return len(self.rewards) // len(self.regimes)

    def occupancy(self) -> dict[Regime, float]:
        """Share of groups in each regime (sums to 1)."""
        counts = np.bincount(self.regimes, minlength=len(Regime))
        return {r: float(counts[r]) / len(self.regimes) for r in Regime}

    def mean_success(self) -> float:
        """Mean success over all rollouts."""
        return float(self.success_rate.mean())


def _as_vector(name: str, values: npt.ArrayLike, n: int | None) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ContractError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if n is not None and len(arr) != n:
        raise ContractError(f"{name} has {len(arr)} values, success has {n}")
    if not np.isfinite(arr).all():
        raise ContractError(f"{name} holds NaN or infinite values (first at index {int(np.argmin(np.isfinite(arr)))})")
    return arr


def _grouped(n: int, group_size: int) -> int:
    if isinstance(group_size, bool) or not isinstance(group_size, int | np.integer) or group_size < 2:
        raise UsageError(f"group_size must be an int >= 2 (GRPO needs a group to compare), got {group_size!r}")
    if n == 0 or n % group_size:
        raise ContractError(f"{n} rollouts do not split into whole groups of {group_size}")
    return n // group_size


def grpo_advantages(rewards: npt.ArrayLike, *, group_size: int, eps: float = 1e-6) -> FloatArray:
    """Plain GRPO group normalization ``(r − mean_g) / (std_g + eps)`` (population std).

    The baseline CARE is compared with, and what CARE itself does outside the efficiency regime.

    Args:
        rewards: one reward per rollout, groups contiguous (rollouts ``i*G … i*G+G-1`` form group i).
        group_size: G.
        eps: added to the std so constant groups get zero advantages.

    Raises:
        UsageError: ``group_size`` < 2.
        ContractError: rewards not finite, not 1-D, or not a whole number of groups.
    """
    r = _as_vector("rewards", rewards, None)
    g = r.reshape(_grouped(len(r), group_size), group_size)
    centered = g - g.mean(axis=1, keepdims=True)
    std = np.sqrt((centered * centered).mean(axis=1, keepdims=True))
    return (centered / (std + eps)).reshape(-1)


def compute_care(
    success: npt.ArrayLike,
    progress: npt.ArrayLike,
    cost: npt.ArrayLike,
    *,
    group_size: int,
    config: CareConfig,
    params: CareParams | None = None,
) -> CareResult:
    """CARE rewards and advantages for a batch of groups; groups may sit in different regimes.

    Args:
        success: binary verified success per rollout (0/1 or bool), groups contiguous.
        progress: verified progress per rollout in [0, 1] (share of verifier criteria met).
        cost: non-negative cost per rollout (output tokens, tool calls, or a weighted mix).
        group_size: G, rollouts per group.
        config: fixed settings (cost normalization, eps) and the starting params.
        params: current params when a controller has moved them; defaults to ``config.params``.

    Returns:
        A :class:`CareResult` with per-rollout rewards and advantages in input order.

    Raises:
        UsageError: ``group_size`` < 2.
        ContractError: arrays of different lengths, not a whole number of groups, NaN/inf,
            success not in {0, 1}, progress outside [0, 1], or negative cost.
    """
    p = params if params is not None else config.params
    s = _as_vector("success", success, None)
    n = len(s)
    n_groups = _grouped(n, group_size)
    prog = _as_vector("progress", progress, n)
    c = _as_vector("cost", cost, n)
    if not ((s == 0.0) | (s == 1.0)).all():
        raise ContractError("success must be binary (0/1): CARE's regimes are defined on verified success")
    if prog.min() < 0.0 or prog.max() > 1.0:
        raise ContractError(f"progress must lie in [0, 1], got range [{prog.min()}, {prog.max()}]")
    if c.min() < 0.0:
        raise ContractError(f"cost must be >= 0, got minimum {c.min()}")

    shape = (n_groups, group_size)
    s, prog, c = s.reshape(shape), prog.reshape(shape), c.reshape(shape)
    rate = s.mean(axis=1)
    # Thresholds are inclusive on the consolidation side: τ_low ≤ s̄ ≤ τ_high is "success only".
    regimes = np.full(n_groups, Regime.OUTCOME, dtype=np.int8)
    regimes[rate < p.tau_low] = Regime.PROGRESS
    regimes[rate > p.tau_high] = Regime.EFFICIENCY
    is_prog = (regimes == Regime.PROGRESS)[:, None]
    is_eff = regimes == Regime.EFFICIENCY

    if config.cost_normalization == "scale":
        assert config.cost_scale is not None  # enforced by CareConfig
        c_norm = c / config.cost_scale
    else:
        mean_cost = c.mean(axis=1, keepdims=True)
        c_norm = np.divide(c, mean_cost, out=np.zeros_like(c), where=mean_cost > 0.0)

    rewards = s + np.where(is_prog, p.lambda_progress * prog, 0.0) - np.where(
        is_eff[:, None], p.lambda_efficiency * c_norm, 0.0
    )
    centered = rewards - rewards.mean(axis=1, keepdims=True)
    std = np.sqrt((centered * centered).mean(axis=1))
    anchor = p.sigma_anchor
    floored = is_eff & (std < anchor)
    normalizer = np.where(is_eff, np.maximum(std, anchor), std + config.eps)
    advantages = centered / normalizer[:, None]
    return CareResult(
        rewards=rewards.reshape(-1),
        advantages=advantages.reshape(-1),
        success_rate=rate,
        regimes=regimes,
        normalizer=normalizer,
        floored=floored,
        params=p,
    )
