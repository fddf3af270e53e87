"""The bounded CARE controller: cadence, bounds, caps, rules, structured and JSONL logging."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from pocketpilot.errors import UsageError
from pocketpilot.trainer_bridge.care import compute_care
from pocketpilot.trainer_bridge.care_config import Bound, CareBounds, CareConfig, CareParams, ControllerConfig
from pocketpilot.trainer_bridge.care_controller import (
    CareController,
    ControllerView,
    Proposal,
    RuleProposer,
    StepStats,
)

G = 8


def stats(step: int, *, prog: float = 0.0, eff: float = 0.0, success: float = 0.5) -> StepStats:
    return StepStats(step=step, groups=16, mean_success=success, occupancy_progress=prog,
                     occupancy_outcome=1.0 - prog - eff, occupancy_efficiency=eff)


def config(**ctl: object) -> CareConfig:
    return CareConfig(params=CareParams(), controller=ControllerConfig(**ctl))  # type: ignore[arg-type]


class Wild:
    """A proposer that asks for absurd values, as a misbehaving LLM controller might."""

    def __init__(self, values: dict[str, float]) -> None:
        self.values = values
        self.views: list[ControllerView] = []

    def propose(self, view: ControllerView, config: ControllerConfig) -> Proposal:
        self.views.append(view)
        return Proposal(values=self.values, reasons={k: "wild" for k in self.values})  # type: ignore[misc]


def test_decisions_only_every_n_steps() -> None:
    wild = Wild({"lambda_efficiency": 0.3})
    ctl = CareController(config(every_n_steps=5), proposer=wild)
    changed_at = [s for s in range(1, 21) if ctl.observe(s, stats(s))]
    assert [v.step for v in wild.views] == [5, 10, 15, 20]
    assert changed_at == [5, 10, 15, 20]
    assert ctl.maybe_update(20) == []  # the same decision point never fires twice


def test_wild_proposals_are_capped_and_clamped_to_bounds() -> None:
    bounds = CareBounds(tau_low=Bound(low=0.1, high=0.4), tau_high=Bound(low=0.6, high=0.9),
                        lambda_progress=Bound(low=0.0, high=1.0), lambda_efficiency=Bound(low=0.0, high=0.3))
    wild = Wild({"tau_low": -5.0, "tau_high": 7.0, "lambda_progress": 1e9, "lambda_efficiency": float("nan")})
    ctl = CareController(config(every_n_steps=1, bounds=bounds, max_tau_step=0.05, max_lambda_step=0.25), proposer=wild)
    history = [ctl.params]
    for step in range(1, 60):
        ctl.observe(step, stats(step))
        history.append(ctl.params)
    for before, after in zip(history, history[1:], strict=False):
        assert abs(after.tau_low - before.tau_low) <= 0.05 + 1e-12
        assert abs(after.tau_high - before.tau_high) <= 0.05 + 1e-12
        assert after.lambda_progress <= before.lambda_progress * 1.25 + 0.01 + 1e-12
        assert after.tau_high - after.tau_low >= 0.1 - 1e-12
    final = ctl.params
    assert final.tau_low == pytest.approx(0.1) and final.tau_high == pytest.approx(0.9)
    assert final.lambda_progress == pytest.approx(1.0)
    assert final.lambda_efficiency == CareParams().lambda_efficiency  # NaN proposal ignored
    assert all(c.limited for c in ctl.changes)
    assert {c.param for c in ctl.changes} == {"tau_low", "tau_high", "lambda_progress"}


def test_tau_gap_is_kept_when_the_proposer_crosses_the_thresholds() -> None:
    bounds = CareBounds(tau_low=Bound(low=0.1, high=0.6), tau_high=Bound(low=0.3, high=0.9))
    wild = Wild({"tau_low": 0.6, "tau_high": 0.3})
    cfg = CareConfig(params=CareParams(tau_low=0.3, tau_high=0.6),
                     controller=ControllerConfig(every_n_steps=1, bounds=bounds, min_tau_gap=0.2))
    ctl = CareController(cfg, proposer=wild)
    for step in range(1, 20):
        ctl.observe(step, stats(step))
        assert ctl.params.tau_high - ctl.params.tau_low >= 0.2 - 1e-12
    assert ctl.params.tau_low <= 0.4 + 1e-12 and ctl.params.tau_high >= 0.5 - 1e-12


def test_dev_regression_lowers_efficiency_pressure() -> None:
    ctl = CareController(config(every_n_steps=10, dev_tolerance=0.02))
    for step in range(1, 10):
        ctl.observe(step, stats(step, eff=0.8, success=0.9))
    ctl.record_dev(5, 0.70)
    ctl.record_dev(9, 0.60)
    changes = {c.param: c for c in ctl.observe(10, stats(10, eff=0.8, success=0.9))}
    assert changes["lambda_efficiency"].new < changes["lambda_efficiency"].old
    assert changes["tau_high"].new == pytest.approx(changes["tau_high"].old + 0.05)
    assert "dev success 0.600" in changes["lambda_efficiency"].reason
    assert changes["lambda_efficiency"].dev_success == 0.60


def test_dominant_regimes_move_their_weights() -> None:
    ctl = CareController(config(every_n_steps=5))
    for step in range(1, 6):
        ctl.observe(step, stats(step, prog=0.7, eff=0.0))
    assert ctl.params.lambda_progress > CareParams().lambda_progress
    assert ctl.params.lambda_efficiency == CareParams().lambda_efficiency
    ctl2 = CareController(config(every_n_steps=5))
    for step in range(1, 6):
        ctl2.observe(step, stats(step, prog=0.0, eff=0.9))
    assert ctl2.params.lambda_efficiency > CareParams().lambda_efficiency
    assert ctl2.params.lambda_progress < CareParams().lambda_progress  # progress groups rare


def test_window_drops_old_steps() -> None:
    wild = Wild({})
    ctl = CareController(config(every_n_steps=10, window_steps=3), proposer=wild)
    for step in range(1, 11):
        ctl.observe(step, stats(step, prog=1.0 if step <= 7 else 0.0))
    assert wild.views[-1].occupancy_progress == 0.0  # steps 8..10 only


def test_rule_proposer_from_real_care_results() -> None:
    rng = np.random.default_rng(0)
    cfg = config(every_n_steps=2)
    ctl = CareController(cfg)
    for step in range(1, 3):
        success = (rng.random(64 * G) < 0.05).astype(float)  # mostly failing: progress regime dominates
        res = compute_care(success, rng.random(64 * G), rng.random(64 * G) * 100, group_size=G,
                           config=cfg, params=ctl.params)
        ctl.observe(step, res)
    assert [c.param for c in ctl.changes] == ["lambda_progress"]
    assert ctl.changes[0].mean_success < 0.1


def test_changes_are_logged_structured_and_to_jsonl(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "logs" / "care_changes.jsonl"
    ctl = CareController(config(every_n_steps=1), proposer=Wild({"lambda_efficiency": 0.2, "tau_high": 0.8}),
                         log_path=path)
    with caplog.at_level(logging.INFO, logger="pocketpilot.trainer_bridge.care_controller"):
        ctl.observe(1, stats(1))
        ctl.observe(2, stats(2))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [c.model_dump() for c in ctl.changes]
    assert [(d["step"], d["param"]) for d in lines] == [(1, "tau_high"), (1, "lambda_efficiency"),
                                                        (2, "lambda_efficiency")]
    assert lines[0]["old"] == 0.75 and lines[0]["new"] == pytest.approx(0.8) and not lines[0]["limited"]
    assert lines[1]["new"] == pytest.approx(0.125) and lines[1]["limited"]  # 0.1 * 1.25 cap
    records = [r for r in caplog.records if hasattr(r, "care_change")]
    assert [r.care_change for r in records] == lines  # type: ignore[attr-defined]
    assert "lambda_efficiency" in records[1].getMessage()


def test_controller_misuse_raises_usage_error() -> None:
    with pytest.raises(UsageError, match="controller"):
        CareController(CareConfig())
    ctl = CareController(config())
    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        ctl.record_dev(1, 1.5)
    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        ctl.record_dev(1, float("nan"))


def test_rule_proposer_is_silent_when_nothing_calls_for_a_change() -> None:
    view = ControllerView(step=1, params=CareParams(), mean_success=0.5, occupancy_progress=0.3,
                          occupancy_outcome=0.5, occupancy_efficiency=0.2, dev_success=0.5, best_dev_success=0.51)
    assert RuleProposer().propose(view, ControllerConfig()).values == {}
