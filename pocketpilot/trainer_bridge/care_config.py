"""Configuration of CARE: thresholds, weights, cost normalization and controller bounds.

CARE (Competence-Aware Reward-and-Advantage Engineering) picks a reward regime per group of
rollouts from the group's success rate. Its knobs split in two:

* :class:`CareParams` — the values a controller may retune during training (τ_low, τ_high,
  λ_p, λ_e);
* :class:`CareConfig` — those starting values plus what stays fixed (how cost is normalized,
  the numerical epsilon) and, optionally, a :class:`ControllerConfig` with the bounds the
  controller must stay inside.

Everything is a frozen pydantic model, so a bad value fails at load time with a
``pydantic.ValidationError`` (a ``ValueError``) that names the field, not halfway through a
training run.
"""

from __future__ import annotations

import math
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "Bound",
    "CareBounds",
    "CareConfig",
    "CareParams",
    "ControllerConfig",
    "CostNormalization",
]

CostNormalization = Literal["group_mean", "scale"]
"""How the efficiency regime turns raw cost into the penalized quantity.

``group_mean``: ``cost / mean(cost in the group)``. Unit-free (tokens, tool calls or a mix all
work without a scale), and it keeps *relative* differences: two rollouts of 500 and 501 tokens
differ by 0.002, not by the full range as min-max scaling would make them — min-max would
re-create exactly the blow-up of tiny efficiency differences that the σ_anchor floor is there to
stop. λ_e then reads as "reward lost per 100 % excess over the group's mean cost".

``scale``: ``cost / cost_scale`` with a configured scale (e.g. a token budget). Use it when the
cost unit is stable across tasks and you want the same absolute penalty everywhere.
"""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CareParams(_Model):
    """The tunable CARE values; a controller replaces them as a whole, never in place."""

    tau_low: float = Field(default=0.25, gt=0.0, lt=1.0)
    """Below this group success rate, rewards add verified progress (progress shaping)."""
    tau_high: float = Field(default=0.75, gt=0.0, lt=1.0)
    """Above this group success rate, rewards subtract normalized cost (efficiency refinement)."""
    lambda_progress: float = Field(default=0.5, ge=0.0, allow_inf_nan=False)
    """λ_p: weight of verified progress (share of verifier criteria met) in progress shaping."""
    lambda_efficiency: float = Field(default=0.1, ge=0.0, allow_inf_nan=False)
    """λ_e: weight of normalized cost in efficiency refinement."""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.tau_low < self.tau_high:
            raise ValueError(f"tau_low ({self.tau_low}) must be < tau_high ({self.tau_high})")
        return self

    @property
    def sigma_anchor(self) -> float:
        """σ_anchor = sqrt(τ_high·(1−τ_high)): the success std of a group at the efficiency threshold."""
        return math.sqrt(self.tau_high * (1.0 - self.tau_high))


class Bound(_Model):
    """A closed interval ``[low, high]`` a controlled value must stay in."""

    low: float = Field(allow_inf_nan=False)
    high: float = Field(allow_inf_nan=False)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.low > self.high:
            raise ValueError(f"bound low ({self.low}) > high ({self.high})")
        return self

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies inside the closed interval."""
        return self.low <= value <= self.high

    def clamp(self, value: float) -> float:
        """``value`` moved to the nearest point of the interval."""
        return min(max(value, self.low), self.high)


class CareBounds(_Model):
    """Where the controller may move each :class:`CareParams` field."""

    tau_low: Bound = Bound(low=0.1, high=0.4)
    tau_high: Bound = Bound(low=0.6, high=0.9)
    lambda_progress: Bound = Bound(low=0.0, high=1.0)
    lambda_efficiency: Bound = Bound(low=0.0, high=0.3)

    @model_validator(mode="after")
    def _sane(self) -> Self:
        for name in ("tau_low", "tau_high"):
            b: Bound = getattr(self, name)
            if not (0.0 < b.low and b.high < 1.0):
                raise ValueError(f"{name} bounds must lie inside (0, 1), got [{b.low}, {b.high}]")
        for name in ("lambda_progress", "lambda_efficiency"):
            if getattr(self, name).low < 0.0:
                raise ValueError(f"{name} bounds must be >= 0")
        return self


class ControllerConfig(_Model):
    """How and how far the bounded controller may retune :class:`CareParams`."""

    every_n_steps: int = Field(default=50, ge=1)
    """Consider a change only every N training steps."""
    window_steps: int = Field(default=50, ge=1)
    """Training statistics of this many recent steps feed each decision."""
    bounds: CareBounds = CareBounds()
    min_tau_gap: float = Field(default=0.1, gt=0.0, lt=1.0)
    """τ_high − τ_low never drops below this, so the consolidation band never vanishes."""
    max_tau_step: float = Field(default=0.05, gt=0.0, lt=1.0)
    """Largest change of a threshold in one decision (absolute)."""
    max_lambda_step: float = Field(default=0.25, gt=0.0, le=1.0)
    """Largest change of a weight in one decision, relative to its current value."""
    lambda_floor_step: float = Field(default=0.01, gt=0.0)
    """Absolute step used when a weight is 0, where a relative step would stay 0."""
    dev_tolerance: float = Field(default=0.02, ge=0.0, lt=1.0)
    """A dev success rate this far below the best seen counts as a regression."""
    occupancy_high: float = Field(default=0.5, gt=0.0, le=1.0)
    """Occupancy of a regime above which the rules call it dominant."""
    occupancy_low: float = Field(default=0.1, ge=0.0, lt=1.0)
    """Occupancy of a regime below which the rules call it rare."""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.occupancy_low >= self.occupancy_high:
            raise ValueError("occupancy_low must be < occupancy_high")
        return self


class CareConfig(_Model):
    """Starting values, fixed settings and (optionally) controller bounds for CARE."""

    params: CareParams = CareParams()
    cost_normalization: CostNormalization = "group_mean"
    cost_scale: float | None = Field(default=None, gt=0.0, allow_inf_nan=False)
    """Required with ``cost_normalization="scale"``: raw cost divided by this (e.g. a token budget)."""
    eps: float = Field(default=1e-6, gt=0.0, lt=1.0)
    """Added to the group std outside the efficiency regime, as plain GRPO does, so a group of
    identical rewards gets zero advantages instead of a division by zero."""
    controller: ControllerConfig | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.cost_normalization == "scale" and self.cost_scale is None:
            raise ValueError('cost_normalization="scale" needs cost_scale')
        if self.cost_normalization != "scale" and self.cost_scale is not None:
            raise ValueError('cost_scale is only used with cost_normalization="scale"')
        if self.controller is not None:
            bounds, p = self.controller.bounds, self.params
            for name in ("tau_low", "tau_high", "lambda_progress", "lambda_efficiency"):
                b: Bound = getattr(bounds, name)
                value = getattr(p, name)
                if not b.contains(value):
                    raise ValueError(f"initial {name}={value} lies outside its bounds [{b.low}, {b.high}]")
            if p.tau_high - p.tau_low < self.controller.min_tau_gap:
                raise ValueError(
                    f"initial tau gap {p.tau_high - p.tau_low:.3f} < min_tau_gap {self.controller.min_tau_gap}"
                )
        return self
