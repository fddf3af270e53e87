"""The bounded CARE controller: retunes τ and λ every N steps, never outside configured bounds.

The report lets an (LLM) controller configure thresholds and weights from training statistics
and dev-set feedback, while the regimes themselves stay predefined: the AI sets parameters, it
does not invent reward formulas. So the split here is:

* a :class:`CareProposer` (a Protocol; :class:`RuleProposer` ships, an LLM-backed one can be
  plugged in) suggests new :class:`CareParams` from a :class:`ControllerView`;
* :class:`CareController` owns the current params and *enforces*: a decision only every
  ``every_n_steps``, each move capped (``max_tau_step``, ``max_lambda_step``), every value
  clamped to its bound, τ_high − τ_low ≥ ``min_tau_gap``. Whatever a proposer returns, the
  params stay valid and bounded.

Every applied change becomes a :class:`CareChange`: logged as a structured record (the record
rides on the log record as ``care_change``), kept in memory and, with a path, appended to a
JSONL change log, so a run's reward schedule can be audited afterwards.
"""

from __future__ import annotations

import collections
import logging
import math
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from pocketpilot.errors import UsageError
from pocketpilot.trainer_bridge.care import CareResult, Regime
from pocketpilot.trainer_bridge.care_config import CareConfig, CareParams, ControllerConfig

__all__ = [
    "CareChange",
    "CareController",
    "CareProposer",
    "ControllerView",
    "Proposal",
    "RuleProposer",
    "StepStats",
]

logger = logging.getLogger(__name__)

ParamName = Literal["tau_low", "tau_high", "lambda_progress", "lambda_efficiency"]
_PARAMS: tuple[ParamName, ...] = ("tau_low", "tau_high", "lambda_progress", "lambda_efficiency")


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StepStats(_Record):
    """What one training step contributes to the controller's window."""

    step: int
    groups: int
    mean_success: float
    occupancy_progress: float
    occupancy_outcome: float
    occupancy_efficiency: float

    @classmethod
    def from_result(cls, step: int, result: CareResult) -> StepStats:
        """Summarize one :func:`~pocketpilot.trainer_bridge.care.compute_care` result."""
        occ = result.occupancy()
        return cls(
            step=step,
            groups=len(result.regimes),
            mean_success=result.mean_success(),
            occupancy_progress=occ[Regime.PROGRESS],
            occupancy_outcome=occ[Regime.OUTCOME],
            occupancy_efficiency=occ[Regime.EFFICIENCY],
        )


class ControllerView(_Record):
    """What a proposer sees at a decision point: window averages (group-weighted) and dev history."""

    step: int
    params: CareParams
    mean_success: float
    occupancy_progress: float
    occupancy_outcome: float
    occupancy_efficiency: float
    dev_success: float | None
    """The latest dev-set success rate, if one was reported."""
    best_dev_success: float | None
    """The best dev-set success rate reported so far."""


class Proposal(_Record):
    """A proposer's suggestion: new values (absent = unchanged) and why."""

    values: dict[ParamName, float]
    reasons: dict[ParamName, str]


class CareChange(_Record):
    """One applied change of one parameter, as logged and written to the JSONL change log."""

    step: int
    param: ParamName
    old: float
    new: float
    proposed: float
    """What the proposer asked for, before capping and clamping."""
    reason: str
    limited: bool
    """Whether the step cap, a bound or the τ gap cut the proposal short."""
    mean_success: float
    dev_success: float | None


@runtime_checkable
class CareProposer(Protocol):
    """Suggests new CARE params; the controller caps and bounds whatever comes back."""

    def propose(self, view: ControllerView, config: ControllerConfig) -> Proposal:
        """Return the wanted values (only those to change) with a reason for each."""
        ...


class RuleProposer:
    """Three rules, in order of precedence, from window statistics and dev results.

    1. **Quality guard** — dev success fell more than ``dev_tolerance`` below its best: lower λ_e
       and raise τ_high (less and later efficiency pressure). Cost savings never pay for a
       quality regression, which is the report's success-first rule.
    2. **Efficiency** — otherwise, when efficiency groups dominate (occupancy ≥ occupancy_high),
       raise λ_e: most groups are mastered and cost is the signal left to learn from. When they
       are rare, leave λ_e alone.
    3. **Progress shaping** — progress groups dominating means the model is stuck: raise λ_p for
       a denser signal; progress groups being rare: lower λ_p so partial progress stops paying
       once success is within reach (it invites partial-credit hacking).
    """

    def propose(self, view: ControllerView, config: ControllerConfig) -> Proposal:
        """See the class docstring."""
        p = view.params
        values: dict[ParamName, float] = {}
        reasons: dict[ParamName, str] = {}
        regressed = (
            view.dev_success is not None
            and view.best_dev_success is not None
            and view.dev_success < view.best_dev_success - config.dev_tolerance
        )
        if regressed:
            why = f"dev success {view.dev_success:.3f} < best {view.best_dev_success:.3f} - tolerance"
            values["lambda_efficiency"] = p.lambda_efficiency * (1.0 - config.max_lambda_step)
            reasons["lambda_efficiency"] = why
            values["tau_high"] = p.tau_high + config.max_tau_step
            reasons["tau_high"] = why
        elif view.occupancy_efficiency >= config.occupancy_high:
            values["lambda_efficiency"] = _grow(p.lambda_efficiency, config)
            reasons["lambda_efficiency"] = f"efficiency occupancy {view.occupancy_efficiency:.2f} dominant"
        if view.occupancy_progress >= config.occupancy_high:
            values["lambda_progress"] = _grow(p.lambda_progress, config)
            reasons["lambda_progress"] = f"progress occupancy {view.occupancy_progress:.2f} dominant"
        elif view.occupancy_progress <= config.occupancy_low:
            values["lambda_progress"] = p.lambda_progress * (1.0 - config.max_lambda_step)
            reasons["lambda_progress"] = f"progress occupancy {view.occupancy_progress:.2f} rare"
        return Proposal(values=values, reasons=reasons)


def _grow(value: float, config: ControllerConfig) -> float:
    # A relative step from 0 stays 0; the floor step lets a weight switched off come back.
    return max(value * (1.0 + config.max_lambda_step), value + config.lambda_floor_step)


class CareController:
    """Owns the current :class:`CareParams` and changes them only within bounds, every N steps.

    Feed it :meth:`observe` once per training step and :meth:`record_dev` after each dev-set
    evaluation; call :meth:`maybe_update` each step (``observe`` does so itself by default).
    Read :attr:`params` when computing CARE.

    Args:
        config: a :class:`CareConfig` whose ``controller`` section is set (bounds, N, caps).
        proposer: where suggestions come from; :class:`RuleProposer` by default.
        log_path: optional JSONL file every applied :class:`CareChange` is appended to.

    Raises:
        UsageError: ``config.controller`` is None.
    """

    def __init__(
        self,
        config: CareConfig,
        *,
        proposer: CareProposer | None = None,
        log_path: str | Path | None = None,
    ) -> None:
        if config.controller is None:
            raise UsageError("CareController needs CareConfig.controller (bounds, every_n_steps)")
        self._config = config
        self._ctl: ControllerConfig = config.controller
        self._proposer: CareProposer = proposer or RuleProposer()
        self._log_path = Path(log_path) if log_path is not None else None
        self._params = config.params
        self._window: collections.deque[StepStats] = collections.deque()
        self._dev: list[tuple[int, float]] = []
        self._last_decision: int | None = None
        self.changes: list[CareChange] = []
        """Every applied change, oldest first."""

    @property
    def params(self) -> CareParams:
        """The values CARE should use now."""
        return self._params

    @property
    def dev_history(self) -> list[tuple[int, float]]:
        """``(step, dev success rate)`` pairs in the order reported."""
        return list(self._dev)

    def observe(self, step: int, result: CareResult | StepStats, *, update: bool = True) -> list[CareChange]:
        """Add one step's statistics to the window; with ``update``, run :meth:`maybe_update`.

        Returns:
            The changes applied by this call (empty unless a decision point changed something).
        """
        stats = result if isinstance(result, StepStats) else StepStats.from_result(step, result)
        self._window.append(stats)
        while self._window and self._window[0].step <= step - self._ctl.window_steps:
            self._window.popleft()
        return self.maybe_update(step) if update else []

    def record_dev(self, step: int, success_rate: float) -> None:
        """Report a dev-set success rate (the quality guard compares it with the best so far).

        Raises:
            UsageError: a rate outside [0, 1] or NaN.
        """
        if not (0.0 <= success_rate <= 1.0):
            raise UsageError(f"dev success rate must lie in [0, 1], got {success_rate}")
        self._dev.append((step, float(success_rate)))

    def maybe_update(self, step: int) -> list[CareChange]:
        """At a decision point (every N steps, with statistics in the window), apply a bounded proposal."""
        if step <= 0 or step % self._ctl.every_n_steps or not self._window or self._last_decision == step:
            return []
        self._last_decision = step
        view = self._view(step)
        proposal = self._proposer.propose(view, self._ctl)
        return self._apply(step, view, proposal)

    def _view(self, step: int) -> ControllerView:
        total = sum(s.groups for s in self._window) or 1

        def avg(field: str) -> float:
            return sum(getattr(s, field) * s.groups for s in self._window) / total

        devs = [v for _, v in self._dev]
        return ControllerView(
            step=step,
            params=self._params,
            mean_success=avg("mean_success"),
            occupancy_progress=avg("occupancy_progress"),
            occupancy_outcome=avg("occupancy_outcome"),
            occupancy_efficiency=avg("occupancy_efficiency"),
            dev_success=devs[-1] if devs else None,
            best_dev_success=max(devs) if devs else None,
        )

    def _bounded(self, name: ParamName, old: float, wanted: float, new_taus: dict[str, float]) -> float:
        ctl = self._ctl
        if not math.isfinite(wanted):
            return old
        if name.startswith("tau"):
            cap = ctl.max_tau_step
        else:
            cap = max(abs(old) * ctl.max_lambda_step, ctl.lambda_floor_step)
        value = min(max(wanted, old - cap), old + cap)
        value = getattr(ctl.bounds, name).clamp(value)
        if name == "tau_high":
            value = max(value, new_taus["tau_low"] + ctl.min_tau_gap)
            value = min(value, ctl.bounds.tau_high.high)
        elif name == "tau_low":
            value = min(value, new_taus["tau_high"] - ctl.min_tau_gap)
            value = max(value, ctl.bounds.tau_low.low)
        return value

    def _apply(self, step: int, view: ControllerView, proposal: Proposal) -> list[CareChange]:
        current = self._params.model_dump()
        new = dict(current)
        applied: list[CareChange] = []
        for name in _PARAMS:
            if name not in proposal.values:
                continue
            wanted = float(proposal.values[name])
            value = self._bounded(name, current[name], wanted, new)
            # A tau pair that the gap rule cannot satisfy inside the bounds leaves the old value.
            if name.startswith("tau") and not self._taus_ok({**new, name: value}):
                value = current[name]
            if math.isclose(value, current[name], rel_tol=0.0, abs_tol=1e-12):
                continue
            new[name] = value
            applied.append(
                CareChange(
                    step=step,
                    param=name,
                    old=current[name],
                    new=value,
                    proposed=wanted,
                    reason=proposal.reasons.get(name, "unspecified"),
                    limited=not math.isclose(value, wanted, rel_tol=0.0, abs_tol=1e-12),
                    mean_success=view.mean_success,
                    dev_success=view.dev_success,
                )
            )
        if not applied:
            return []
        self._params = CareParams(**new)
        for change in applied:
            self._log(change)
        return applied

    def _taus_ok(self, values: dict[str, float]) -> bool:
        b = self._ctl.bounds
        return (
            b.tau_low.contains(values["tau_low"])
            and b.tau_high.contains(values["tau_high"])
            and values["tau_high"] - values["tau_low"] >= self._ctl.min_tau_gap - 1e-12
        )

    def _log(self, change: CareChange) -> None:
        self.changes.append(change)
        logger.info(
            "CARE step %d: %s %.4g -> %.4g (%s)",
            change.step,
            change.param,
            change.old,
            change.new,
            change.reason,
            extra={"care_change": change.model_dump()},
        )
        if self._log_path is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            with self._log_path.open("a", encoding="utf-8") as fh:
                fh.write(change.model_dump_json() + "\n")
