"""CARE rewards/advantages: the report's floor analysis, regimes, mixed batches, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from pocketpilot.errors import ContractError, UsageError
from pocketpilot.trainer_bridge.care import Regime, compute_care, grpo_advantages
from pocketpilot.trainer_bridge.care_config import Bound, CareBounds, CareConfig, CareParams, ControllerConfig

G = 8


def cfg(**params: float) -> CareConfig:
    return CareConfig(params=CareParams(**params))


def plain_of(result_rewards: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    return grpo_advantages(result_rewards, group_size=G, eps=eps)


# -- the report's analysis -------------------------------------------------------------------

ALL_SUCCESS_COST = np.array([500, 501, 498, 502, 499, 500, 503, 497], dtype=float)  # tiny differences


@pytest.mark.parametrize("lam", [0.02, 0.1, 0.3])
def test_all_success_group_plain_normalization_is_unit_scale_whatever_lambda(lam: float) -> None:
    config = cfg(lambda_efficiency=lam)
    res = compute_care(np.ones(G), np.ones(G), ALL_SUCCESS_COST, group_size=G, config=config)
    assert res.regimes.tolist() == [Regime.EFFICIENCY]
    plain = plain_of(res.rewards)
    # Plain GRPO divides lambda_e out again: unit std, identical for every lambda.
    assert np.std(plain) == pytest.approx(1.0, abs=1e-6)
    reference = -(ALL_SUCCESS_COST - ALL_SUCCESS_COST.mean()) / ALL_SUCCESS_COST.std()
    np.testing.assert_allclose(plain, reference, atol=1e-6)


def test_all_success_group_floored_advantages_scale_with_lambda() -> None:
    lams = [0.02, 0.1, 0.3]
    advs = [
        compute_care(np.ones(G), np.ones(G), ALL_SUCCESS_COST, group_size=G, config=cfg(lambda_efficiency=lam))
        for lam in lams
    ]
    for res in advs:
        assert res.floored.tolist() == [True]
        assert res.normalizer[0] == pytest.approx(math.sqrt(0.75 * 0.25))
        # Small cost differences stay small: far below GRPO's unit scale.
        assert np.abs(res.advantages).max() < 0.05
    # Linear in lambda_e: the ratio of advantages is the ratio of lambdas.
    np.testing.assert_allclose(advs[1].advantages, advs[0].advantages * (0.1 / 0.02), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(advs[2].advantages, advs[0].advantages * (0.3 / 0.02), rtol=1e-9, atol=1e-12)
    # Exact form: -lambda * (c_hat - mean c_hat) / sigma_anchor, with c_hat = c / mean(c).
    c_hat = ALL_SUCCESS_COST / ALL_SUCCESS_COST.mean()
    expected = -0.1 * (c_hat - c_hat.mean()) / math.sqrt(0.75 * 0.25)
    np.testing.assert_allclose(advs[1].advantages, expected, rtol=1e-9, atol=1e-12)
    # Cheaper rollouts still rank higher.
    assert np.argmax(advs[1].advantages) == np.argmin(ALL_SUCCESS_COST)


def test_mixed_group_is_unaffected_by_the_floor() -> None:
    # Outcome regime: the floor never applies; advantages are plain GRPO of the success indicator.
    s = np.array([1, 0, 1, 0, 1, 0, 1, 1], dtype=float)
    res = compute_care(s, np.zeros(G), ALL_SUCCESS_COST, group_size=G, config=cfg())
    assert res.regimes.tolist() == [Regime.OUTCOME]
    np.testing.assert_allclose(res.advantages, plain_of(s, eps=1e-6), rtol=1e-12)
    # Efficiency regime, mixed group whose reward std already exceeds sigma_anchor: identical to
    # plain GRPO on the same rewards (the floor is max(std, anchor), not an addition).
    s = np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=float)
    res = compute_care(s, np.zeros(G), ALL_SUCCESS_COST, group_size=G, config=cfg(tau_low=0.2, tau_high=0.4))
    assert res.regimes.tolist() == [Regime.EFFICIENCY]
    assert res.floored.tolist() == [False]
    np.testing.assert_allclose(res.advantages, plain_of(res.rewards, eps=0.0), rtol=1e-12)
    assert np.abs(res.advantages).max() > 0.5  # success still dominates: unit scale


def test_mixed_efficiency_group_below_anchor_keeps_signs_and_order() -> None:
    # With tau_high > 0.5, a 7/8 group's success std (0.33) is below sigma_anchor (0.43): the
    # floor shrinks it by std/anchor but never flips a sign or reorders rollouts.
    s = np.array([1, 1, 1, 1, 1, 1, 1, 0], dtype=float)
    res = compute_care(s, np.zeros(G), ALL_SUCCESS_COST, group_size=G, config=cfg())
    plain = plain_of(res.rewards, eps=0.0)
    assert res.floored.tolist() == [True]
    np.testing.assert_allclose(res.advantages, plain * (np.std(res.rewards) / res.normalizer[0]), rtol=1e-12)
    assert (np.sign(res.advantages) == np.sign(plain)).all()
    assert (np.argsort(res.advantages) == np.argsort(plain)).all()


# -- regimes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "regime"),
    [(0, Regime.PROGRESS), (1, Regime.PROGRESS), (2, Regime.OUTCOME), (6, Regime.OUTCOME),
     (7, Regime.EFFICIENCY), (8, Regime.EFFICIENCY)],
)
def test_regime_selection_is_inclusive_at_the_thresholds(k: int, regime: Regime) -> None:
    # tau_low = 2/8 and tau_high = 6/8 exactly: both thresholds belong to consolidation.
    s = np.array([1.0] * k + [0.0] * (G - k))
    res = compute_care(s, np.full(G, 0.5), np.arange(G) + 1.0, group_size=G, config=cfg(tau_low=0.25, tau_high=0.75))
    assert res.regimes.tolist() == [regime]
    assert res.success_rate[0] == k / G


def test_mixed_regime_batch_each_group_gets_its_own_formula() -> None:
    lam_p, lam_e = 0.5, 0.2
    config = cfg(lambda_progress=lam_p, lambda_efficiency=lam_e)
    s = np.concatenate([np.zeros(G), [1, 1, 1, 0, 0, 0, 1, 0], np.ones(G), [1, 0, 0, 0, 0, 0, 0, 0]])
    prog = np.tile(np.linspace(0.0, 1.0, G), 4)
    cost = np.tile(np.arange(1.0, G + 1), 4)
    res = compute_care(s, prog, cost, group_size=G, config=config)
    assert res.regimes.tolist() == [Regime.PROGRESS, Regime.OUTCOME, Regime.EFFICIENCY, Regime.PROGRESS]
    r = res.rewards.reshape(4, G)
    np.testing.assert_allclose(r[0], lam_p * prog[:G])
    np.testing.assert_allclose(r[1], s[G : 2 * G])
    np.testing.assert_allclose(r[2], 1.0 - lam_e * cost[:G] / cost[:G].mean())
    np.testing.assert_allclose(r[3], s[3 * G :] + lam_p * prog[:G])
    # Each group is normalized on its own: zero mean per group, unit std outside efficiency.
    a = res.advantages.reshape(4, G)
    np.testing.assert_allclose(a.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(a[[0, 1, 3]].std(axis=1), 1.0, atol=1e-4)
    assert res.occupancy() == {Regime.PROGRESS: 0.5, Regime.OUTCOME: 0.25, Regime.EFFICIENCY: 0.25}
    # The same groups computed one at a time give the same numbers (no cross-group leakage).
    for i in range(4):
        sl = slice(i * G, (i + 1) * G)
        alone = compute_care(s[sl], prog[sl], cost[sl], group_size=G, config=config)
        np.testing.assert_allclose(alone.advantages, res.advantages[sl], rtol=1e-12)


def test_cost_scale_normalization_uses_the_configured_scale() -> None:
    config = CareConfig(params=CareParams(lambda_efficiency=0.5), cost_normalization="scale", cost_scale=100.0)
    cost = np.array([100, 200, 300, 400, 100, 200, 300, 400], dtype=float)
    res = compute_care(np.ones(G), np.zeros(G), cost, group_size=G, config=config)
    np.testing.assert_allclose(res.rewards, 1.0 - 0.5 * cost / 100.0)
    # Group-mean normalization of the same costs gives a different (unit-free) penalty.
    by_mean = compute_care(np.ones(G), np.zeros(G), cost, group_size=G, config=cfg(lambda_efficiency=0.5))
    np.testing.assert_allclose(by_mean.rewards, 1.0 - 0.5 * cost / cost.mean())


def test_group_mean_normalization_with_zero_cost_gives_zero_advantages() -> None:
    res = compute_care(np.ones(G), np.zeros(G), np.zeros(G), group_size=G, config=cfg())
    assert np.isfinite(res.advantages).all()
    assert not res.advantages.any()


def test_constant_group_outside_efficiency_gets_zero_advantages() -> None:
    res = compute_care(np.zeros(G), np.zeros(G), np.ones(G), group_size=G, config=cfg())
    assert res.regimes.tolist() == [Regime.PROGRESS]
    assert not res.advantages.any()


def test_grpo_baseline_matches_hand_computation() -> None:
    r = np.array([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    a = grpo_advantages(r, group_size=4, eps=0.0 + 1e-12)
    np.testing.assert_allclose(a[:4], [1, -1, -1, 1], atol=1e-9)
    assert not a[4:].any()


# -- bad input and bad config ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("success", "progress", "cost", "match"),
    [
        ([1, 0, 2, 1], [0] * 4, [1] * 4, "binary"),
        ([1, 0, 1, 1], [0, 0, 1.5, 0], [1] * 4, r"\[0, 1\]"),
        ([1, 0, 1, 1], [0] * 4, [1, -1, 1, 1], ">= 0"),
        ([1, 0, 1, float("nan")], [0] * 4, [1] * 4, "NaN"),
        ([1, 0, 1, 1], [0] * 3, [1] * 4, "3 values"),
        ([1, 0, 1, 1, 1, 0], [0] * 6, [1] * 6, "whole groups"),
        ([[1, 0, 1, 1]], [0] * 4, [1] * 4, "one-dimensional"),
    ],
)
def test_bad_rollout_data_raises_contract_error(success, progress, cost, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ContractError, match=match):
        compute_care(success, progress, cost, group_size=4, config=cfg())


@pytest.mark.parametrize("g", [1, 0, 2.0, True])
def test_bad_group_size_raises_usage_error(g: object) -> None:
    with pytest.raises(UsageError, match="group_size"):
        compute_care([1, 0], [0, 0], [1, 1], group_size=g, config=cfg())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: CareParams(tau_low=0.8, tau_high=0.6), "tau_low"),
        (lambda: CareParams(tau_low=0.5, tau_high=0.5), "tau_low"),
        (lambda: CareParams(tau_high=1.0), "less than 1"),
        (lambda: CareParams(tau_low=0.0), "greater than 0"),
        (lambda: CareParams(lambda_efficiency=-0.1), "greater than or equal to 0"),
        (lambda: CareParams(lambda_progress=float("inf")), "finite"),
        (lambda: CareConfig(cost_normalization="scale"), "needs cost_scale"),
        (lambda: CareConfig(cost_scale=10.0), "only used"),
        (lambda: CareConfig(cost_normalization="minmax"), "group_mean"),
        (lambda: CareParams(tau_lo=0.2), "Extra inputs"),
        (lambda: Bound(low=0.5, high=0.4), "low"),
        (lambda: CareBounds(tau_high=Bound(low=0.6, high=1.0)), r"inside \(0, 1\)"),
        (lambda: CareBounds(lambda_efficiency=Bound(low=-1.0, high=1.0)), ">= 0"),
        (lambda: ControllerConfig(every_n_steps=0), "greater than or equal to 1"),
        (lambda: ControllerConfig(occupancy_low=0.6, occupancy_high=0.5), "occupancy_low"),
        (
            lambda: CareConfig(params=CareParams(lambda_efficiency=0.5), controller=ControllerConfig()),
            r"lambda_efficiency=0.5 lies outside",
        ),
        (
            lambda: CareConfig(params=CareParams(tau_low=0.35, tau_high=0.4),
                               controller=ControllerConfig(bounds=CareBounds(tau_high=Bound(low=0.4, high=0.9)))),
            "min_tau_gap",
        ),
    ],
)
def test_bad_config_is_rejected_with_the_field_named(build, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError, match=match):
        build()


def test_config_round_trips_through_json() -> None:
    config = CareConfig(params=CareParams(tau_low=0.2), controller=ControllerConfig(every_n_steps=10))
    assert CareConfig.model_validate_json(config.model_dump_json()) == config
    assert CareParams().sigma_anchor == pytest.approx(math.sqrt(0.1875))


# -- properties ------------------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis not installed (dev extra)")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import arrays  # noqa: E402


@st.composite
def batches(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, CareParams]:
    g = draw(st.integers(2, 10))
    n = g * draw(st.integers(1, 12))
    success = draw(arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0])))
    progress = draw(arrays(np.float64, n, elements=st.floats(0.0, 1.0)))
    cost = draw(arrays(np.float64, n, elements=st.floats(0.0, 1e4)))
    lo = draw(st.floats(0.05, 0.6))
    hi = draw(st.floats(lo + 0.01, 0.95))
    params = CareParams(tau_low=lo, tau_high=hi, lambda_progress=draw(st.floats(0.0, 2.0)),
                        lambda_efficiency=draw(st.floats(0.0, 2.0)))
    return success, progress, cost, g, params


@settings(max_examples=150, deadline=None)
@given(batches())
def test_properties_hold_for_any_batch(batch: tuple[np.ndarray, np.ndarray, np.ndarray, int, CareParams]) -> None:
    success, progress, cost, g, params = batch
    config = CareConfig(params=params)
    res = compute_care(success, progress, cost, group_size=g, config=config)
    rate = success.reshape(-1, g).mean(axis=1)
    expected = np.where(rate < params.tau_low, Regime.PROGRESS,
                        np.where(rate > params.tau_high, Regime.EFFICIENCY, Regime.OUTCOME))
    assert (res.regimes == expected).all()
    a = res.advantages.reshape(-1, g)
    assert np.isfinite(a).all()
    np.testing.assert_allclose(a.mean(axis=1), 0.0, atol=1e-9)
    plain = grpo_advantages(res.rewards, group_size=g, eps=config.eps).reshape(-1, g)
    eff = res.regimes == Regime.EFFICIENCY
    # Outside efficiency CARE normalizes exactly like plain GRPO on its own rewards.
    np.testing.assert_allclose(a[~eff], plain[~eff], rtol=1e-9, atol=1e-9)
    # In efficiency the floor only ever shrinks advantages, never flips their sign.
    assert (res.normalizer[eff] >= params.sigma_anchor - 1e-15).all()
    raw = grpo_advantages(res.rewards, group_size=g, eps=1e-300).reshape(-1, g)  # std without eps
    assert (np.abs(a[eff]) <= np.abs(raw[eff]) * (1 + 1e-9) + 1e-12).all()
    assert (a[eff] * raw[eff] >= -1e-12).all()
