"""Every way a step ends the run reaches the loop as one typed outcome."""

from __future__ import annotations

from pocketpilot.contracts import ToolCall
from pocketpilot.harness.loop import Run
from pocketpilot.harness.outcome import Continue, FollowUps, Stopped
from pocketpilot.harness.policies import Advice
from pocketpilot.harness.policies.base import Stop
from pocketpilot.harness.routed import Routed

CALL = ToolCall(name="t", arguments={})


def test_the_routed_stop_comes_before_a_policy_stop_and_follow_ups() -> None:
    advice = Advice(followups=[CALL], stop=Stop("refuse", "policy"))
    assert Run._outcome(Routed(stop="finish", stop_detail="done"), advice) == Stopped("finish", "done")
    assert Run._outcome(Routed(), advice) == Stopped("refuse", "policy")


def test_follow_ups_and_a_changed_prefix_travel_in_the_outcome() -> None:
    assert Run._outcome(Routed(prefix_changed=True), Advice(followups=[CALL])) == FollowUps([CALL], prefix_changed=True)
    assert Run._outcome(Routed(prefix_changed=True), Advice()) == Continue(prefix_changed=True)
    assert Run._outcome(Routed(), Advice()) == Continue()
