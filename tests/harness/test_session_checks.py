"""The session's own checks, exercised without the planner's validation in front of them.

A validating planner rejects an unexposed tool or an unoffered kind before the session sees
it, so the session's checks could be deleted and every other test would still pass. Here the
planner does not validate (``ScriptedPlanner(validate=False)``, like a model without a
grammar), and each test names the mutation it exists to catch.
"""

from __future__ import annotations

import pytest
from scripted_actions import call

from pocketpilot.contracts import ToolCall, ToolCallAction, ToolResult, ToolSpec
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, HarnessConfig, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.scope import out_of_scope
from pocketpilot.skills.gates import DependsOnResultGate

FINISH = {"kind": "finish", "summary": "done"}


# ---------------------------------------------------------------- the non-validating planner


async def test_an_unvalidating_planner_passes_unoffered_actions_but_not_malformed_ones():
    from pocketpilot.errors import PlannerOutputError
    from pocketpilot.harness.base import PlanRequest

    request = PlanRequest(messages=[], tools=[ToolSpec(name="convert")], kinds=("finish",))
    unchecked = ScriptedPlanner([call("wipe"), '{"kind": "tool_call", "calls": []}'], validate=False)
    out = await unchecked.plan(request)
    assert out.action.kind == "tool_call" and out.action.calls[0].name == "wipe"
    with pytest.raises(PlannerOutputError):  # still a well-formed action or nothing
        await unchecked.plan(request)
    with pytest.raises(PlannerOutputError, match="not allowed"):  # the default validates
        await ScriptedPlanner([call("wipe")]).plan(request)


# ---------------------------------------------------------------- parse failures


async def test_a_good_output_resets_the_parse_failure_count(registry, toys):
    """Catches: ``parse_failures`` not reset after a parsed action."""
    planner = ScriptedPlanner(["{", "{", call("set_lamp", on=True), "{", "{", FINISH])
    episode = await Session(planner, registry, config=HarnessConfig(max_parse_failures=3)).run("lamp on")
    assert episode.stop_reason == "finish"  # two bad outputs, a good one, two bad: never three in a row
    assert [s.error is not None for s in episode.steps] == [True, True, False, True, True, False]
    assert toys.lamp is True


# ---------------------------------------------------------------- unexposed tools, unoffered kinds


async def test_a_tool_the_session_does_not_expose_never_runs(registry, toys):
    """Catches: ``Session`` running a call of a tool the executor has but this session does not expose."""
    planner = ScriptedPlanner([call("set_lamp", on=True), call("wipe"), FINISH], validate=False)
    session = Session(planner, registry, tools=["convert"], confirm=AllowAll())
    episode = await session.run("convert 3 km")
    for step, name in zip(episode.steps[:2], ("set_lamp", "wipe"), strict=False):
        result = step.results[0]
        assert not result.ok and result.error.code == "unknown_tool" and name in result.error.message
    assert toys.log == [] and toys.lamp is False  # not even the allowed-anyway destructive wipe ran


async def test_an_action_kind_the_session_does_not_offer_is_not_routed(registry, toys):
    """Catches: ``Session`` accepting a kind outside ``actions``."""
    planner = ScriptedPlanner([call("set_lamp", on=True), FINISH], validate=False)
    episode = await Session(planner, registry, actions=["ask_user", "finish"]).run("what can you do?")
    result = episode.steps[0].results[0]
    assert not result.ok and result.error.code == "not_allowed" and "tool_call" in result.error.message
    assert toys.lamp is False and episode.stop_reason == "finish"


async def test_a_kind_narrowed_away_for_one_step_is_not_routed_in_that_step(registry, toys):
    """Catches: routing checking the session's kinds instead of the ones offered this step.

    After a batch that repeats one that just succeeded, the loop guard offers the next step no
    tool_call; a planner that calls a tool anyway is told no, and the tool does not run.
    """
    on = call("set_lamp", on=True)
    planner = ScriptedPlanner([on, on, call("set_lamp", on=False), FINISH], validate=False)
    episode = await Session(planner, registry, config=HarnessConfig()).run("lamp on")
    assert "tool_call" not in planner.requests[2].kinds
    third = episode.steps[2].results[0]
    assert not third.ok and third.error.code == "not_allowed"
    assert toys.lamp is True and toys.log == ["lamp=True", "lamp=True"]


async def test_a_sub_agent_cannot_delegate_past_the_depth_limit(registry, toys):
    """Catches: a child at ``max_delegate_depth`` routing a delegate it was never offered."""
    planner = ScriptedPlanner(
        [
            {"kind": "delegate", "instruction": "turn the lamp on", "tools": ["set_lamp"]},
            {"kind": "delegate", "instruction": "you do it", "tools": ["set_lamp"]},  # the child tries again
            FINISH,  # child
            FINISH,  # parent
        ],
        validate=False,
    )
    episode = await Session(planner, registry).run("lamp on")
    child = episode.steps[0].children[0]
    assert child.steps[0].results[0].error.code == "not_allowed"
    assert child.steps[0].children == []
    assert planner.remaining == 0


# ---------------------------------------------------------------- scope guard


def _specs() -> dict[str, ToolSpec]:
    return {t.name: t for t in SandboxExecutor(SandboxPhone()).tools()}


def test_an_inflected_word_grounds_a_setting():
    """Catches: ``_stem`` disabled in the scope guard (only the exact word would ground a setting)."""
    specs = _specs()
    assert not out_of_scope(specs["set_do_not_disturb"], ["I don't want to be disturbed tonight."])
    assert not out_of_scope(specs["set_ring_mode"], ["Stop the ringing during the film."])
    assert out_of_scope(specs["set_ring_mode"], ["I don't want to be disturbed tonight."])  # control


async def test_the_scope_guard_lets_an_inflected_request_through():
    """The same mutation, seen from a run: the asked-for setting must run, not be held."""
    phone = SandboxPhone()
    planner = ScriptedPlanner([call("set_do_not_disturb", enabled=True), FINISH])
    episode = await Session(planner, SandboxExecutor(phone), tools=["set_do_not_disturb"], confirm=AllowAll(),
                            config=HarnessConfig()).run("I don't want to be disturbed tonight.")
    assert episode.steps[0].results[0].ok and phone.state.settings.do_not_disturb is True


# ---------------------------------------------------------------- checked_in_batch


SEND = DependsOnResultGate(tools=frozenset({"send_sms"}), skill="s", waits_for=frozenset({"lookup_contact"}))


def test_checked_in_batch_needs_a_single_record_not_a_listing():
    """Catches: ``DependsOnResultGate.checked_in_batch`` accepting a listing as the check."""
    send = ToolCall(name="send_sms", arguments={"to": "Sam", "body": "hi"})
    lookup = ToolCall(name="lookup_contact", arguments={"name": "Sam"})
    held = ToolResult.failure("precondition_failed", "wait")
    one = ToolResult.success({"id": "c7", "name": "Sam Taylor"})
    several = ToolResult.success([{"id": "c7", "name": "Sam Taylor"}, {"id": "c9", "name": "Sam Ortiz"}])
    assert SEND.checked_in_batch(send, [(lookup, one), (send, held)])
    assert not SEND.checked_in_batch(send, [(lookup, several), (send, held)])
    assert not SEND.checked_in_batch(send, [(lookup, ToolResult.failure("not_found", "no Sam")), (send, held)])


class Contacts:
    """Two Sams or one, and a send that records what it sent."""

    def __init__(self, sams: int) -> None:
        self.sams, self.sent = sams, []

    def tools(self) -> list[ToolSpec]:
        return [ToolSpec(name="lookup_contact"), ToolSpec(name="send_sms", destructive=True)]

    async def call(self, call: ToolCall) -> ToolResult:
        if call.name == "send_sms":
            self.sent.append(call.arguments["to"])
            return ToolResult.success({"status": "sent"})
        people = [{"id": f"c{i}", "name": f"Sam {i}"} for i in range(self.sams)]
        return ToolResult.success(people[0] if len(people) == 1 else people)


async def test_a_held_send_runs_after_its_batch_only_when_the_lookup_found_one_contact():
    """The same mutation, seen from a run with ``sequence_holds``: two Sams leave the choice to the planner."""
    batch = {"kind": "tool_call", "calls": [{"name": "lookup_contact", "arguments": {"name": "Sam"}},
                                            {"name": "send_sms", "arguments": {"to": "Sam", "body": "hi"}}]}
    sent = {}
    for sams in (1, 2):
        contacts = Contacts(sams)
        planner = ScriptedPlanner([batch, FINISH])
        episode = await Session(planner, contacts, confirm=AllowAll(), gates=[SEND],
                                config=HarnessConfig()).run("text Sam hi")
        assert episode.steps[0].results[1].error.code == "precondition_failed"
        sent[sams] = contacts.sent
        harness_steps = [s for s in episode.steps if s.planner is None and isinstance(s.action, ToolCallAction)]
        assert len(harness_steps) == (1 if sams == 1 else 0)
    assert sent == {1: ["Sam"], 2: []}

