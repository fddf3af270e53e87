"""η names policies through the registry the harness fills; the adapters never import the harness."""

from __future__ import annotations

import pytest

from pocketpilot import policy_registry
from pocketpilot.adapters import Eta
from pocketpilot.adapters.eta import PolicyEntry
from pocketpilot.harness.policies import REGISTRY, BasePolicy, PolicyError, default_entries


def test_the_registry_holds_the_harness_policies_and_its_default_set() -> None:
    assert list(policy_registry.registered()) == list(REGISTRY)
    assert [p.model_dump(mode="json") for p in Eta().policies] == default_entries()
    assert policy_registry.PolicyError is PolicyError  # one error, wherever it is caught


def test_a_policy_registered_by_name_is_one_eta_can_name_and_build(monkeypatch: pytest.MonkeyPatch) -> None:
    class Quiet(BasePolicy):
        name = "quiet_for_test"

    with pytest.raises(ValueError, match="unknown policy"):
        PolicyEntry(name="quiet_for_test")
    monkeypatch.setitem(policy_registry._REGISTRY, "quiet_for_test", Quiet)
    eta = Eta(policies=[PolicyEntry(name="quiet_for_test")])
    (built,) = eta.build_policies()
    assert isinstance(built, Quiet)
    with pytest.raises(PolicyError, match="repeat_failure"):  # parameters the policy does not take
        policy_registry.build([{"name": "repeat_failure", "params": {"loud": True}}])
