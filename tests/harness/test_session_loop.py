from __future__ import annotations

import asyncio
import json
import time

import pytest
from scripted_actions import call

from pocketpilot.contracts import CriterionResult, Verdict
from pocketpilot.errors import UsageError
from pocketpilot.harness import AllowAll, CallbackConfirmation, HarnessConfig, Session, safety_policies
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tracing.trace import read_trace

FINISH = {"kind": "finish", "summary": "done"}


async def test_finish_stops_and_runs_verifier(registry, toys, tmp_path):
    seen = []

    async def verifier(episode):
        seen.append(episode.stop_reason)
        return Verdict(success=toys.lamp, criteria=[CriterionResult(name="lamp on", passed=toys.lamp)])

    planner = ScriptedPlanner([call("set_lamp", on=True), FINISH])
    session = Session(planner, registry, verifier=verifier, trace_dir=tmp_path)
    episode = await session.run("turn on the lamp")
    assert episode.stop_reason == "finish"
    assert episode.verdict is not None and episode.verdict.success
    assert seen == ["finish"]
    assert [s.action.kind for s in episode.steps] == ["tool_call", "finish"]
    assert episode.steps[0].results[0].data == {"lamp": True}
    loaded, complete = read_trace(session.trace_path)
    assert complete and loaded.verdict == episode.verdict
    assert loaded.steps == episode.steps


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ({"kind": "ask_user", "question": "which lamp?"}, "ask_user"),
        ({"kind": "refuse", "reason": "unsafe"}, "refuse"),
    ],
)
async def test_ask_user_and_refuse_stop(registry, action, reason):
    planner = ScriptedPlanner([action, FINISH])
    episode = await Session(planner, registry).run("do it")
    assert episode.stop_reason == reason
    assert len(episode.steps) == 1
    assert planner.remaining == 1


async def test_max_steps_budget(registry):
    planner = ScriptedPlanner([call("set_lamp", on=True)] * 5)
    episode = await Session(planner, registry, config=HarnessConfig(max_steps=3)).run("loop")
    assert episode.stop_reason == "max_steps"
    assert len(episode.steps) == 3


async def test_max_tokens_budget(registry):
    planner = ScriptedPlanner([call("set_lamp", on=True)] * 10)
    episode = await Session(planner, registry, config=HarnessConfig(max_tokens=20)).run("loop")
    assert episode.stop_reason == "max_tokens"
    assert 1 <= len(episode.steps) < 10


async def test_max_seconds_budget_interrupts_a_slow_step(registry):
    planner = ScriptedPlanner([call("sleep_echo", text="a", delay=0.3)] * 10)
    t0 = time.monotonic()
    episode = await Session(planner, registry, config=HarnessConfig(max_seconds=0.5)).run("loop")
    assert episode.stop_reason == "max_seconds"
    assert time.monotonic() - t0 < 2.0


async def test_planner_exhausted_is_planner_error(registry):
    episode = await Session(ScriptedPlanner([call("set_lamp", on=True)]), registry).run("x")
    assert episode.stop_reason == "planner_error"


async def test_malformed_output_is_fed_back_not_a_crash(registry):
    planner = ScriptedPlanner(['{"kind": "tool_call", "calls": [', "not json", FINISH])
    episode = await Session(planner, registry).run("x")
    assert episode.stop_reason == "finish"
    assert episode.steps[0].action is None and episode.steps[0].error.code == "invalid_action"
    # the error and the raw output are shown to the planner in the next context
    last = planner.requests[2].messages
    assert any("invalid_action" in m.content for m in last if m.role == "tool")
    assert any(m.content == "not json" for m in last if m.role == "assistant")


async def test_too_many_malformed_outputs_stop(registry):
    planner = ScriptedPlanner(["{", "{", "{", FINISH])
    episode = await Session(planner, registry, config=HarnessConfig(max_parse_failures=3)).run("x")
    assert episode.stop_reason == "planner_error"
    assert len(episode.steps) == 3


async def test_unexposed_tool_is_rejected_as_output(registry):
    planner = ScriptedPlanner([call("no_such_tool"), FINISH])
    episode = await Session(planner, registry).run("x")
    assert episode.steps[0].error is not None
    assert "not exposed" in episode.steps[0].error.message


async def test_invalid_arguments_come_back_typed(registry, toys):
    planner = ScriptedPlanner([call("set_lamp", on="maybe"), FINISH])
    episode = await Session(planner, registry).run("x")
    result = episode.steps[0].results[0]
    assert not result.ok and result.error.code == "invalid_arguments"
    assert toys.log == []


async def test_repeated_identical_failure_triggers_notice(registry):
    bad = call("convert", value=0, unit="km")
    planner = ScriptedPlanner([bad, bad, call("convert", value=1, unit="km"), FINISH])
    episode = await Session(planner, registry).run("convert")
    assert not any("Stop guessing" in n for n in episode.steps[0].notices)
    assert any("Stop guessing" in n for n in episode.steps[1].notices)
    assert episode.steps[2].results[0].ok
    # the notice reaches the planner in the next context
    assert any("Stop guessing" in m.content for m in planner.requests[2].messages)


async def test_parallel_batch_runs_concurrently_and_keeps_call_order(registry, toys):
    batch = {
        "kind": "tool_call",
        "calls": [
            {"name": "sleep_echo", "arguments": {"text": "slow", "delay": 0.4}},
            {"name": "sleep_echo", "arguments": {"text": "fast", "delay": 0.0}},
            {"name": "sleep_echo", "arguments": {"text": "mid", "delay": 0.2}},
        ],
    }
    t0 = time.monotonic()
    episode = await Session(ScriptedPlanner([batch, FINISH]), registry).run("x")
    elapsed = time.monotonic() - t0
    assert [r.data for r in episode.steps[0].results] == ["slow", "fast", "mid"]
    assert toys.log == ["echo=fast", "echo=mid", "echo=slow"]  # really ran concurrently
    assert elapsed < 0.55


async def test_a_world_that_does_not_declare_concurrency_runs_a_batch_in_order(toys):
    from pocketpilot.executor import ToolRegistry

    serial = ToolRegistry.from_object(toys)  # declares nothing: its calls must not overlap
    batch = {"kind": "tool_call", "calls": [
        {"name": "sleep_echo", "arguments": {"text": "slow", "delay": 0.2}},
        {"name": "sleep_echo", "arguments": {"text": "fast", "delay": 0.0}},
    ]}
    episode = await Session(ScriptedPlanner([batch, FINISH]), serial).run("x")
    assert [r.data for r in episode.steps[0].results] == ["slow", "fast"]
    assert toys.log == ["echo=slow", "echo=fast"]  # in the batch's order, one at a time


async def test_destructive_denied_by_default_and_traced(registry, toys, tmp_path):
    session = Session(ScriptedPlanner([call("wipe"), FINISH]), registry, trace_dir=tmp_path)
    episode = await session.run("wipe it")
    result = episode.steps[0].results[0]
    assert result.error.code == "confirmation_denied"
    assert "wiped" not in toys.log
    assert any("non-interactive" in n for n in episode.steps[0].notices)
    text = session.trace_path.read_text()
    assert "confirmation_denied" in text and "non-interactive" in text


async def test_destructive_allowed_by_policy_and_callback(registry, toys):
    episode = await Session(ScriptedPlanner([call("wipe"), FINISH]), registry, confirm=AllowAll()).run("x")
    assert episode.steps[0].results[0].ok and toys.log == ["wiped"]
    asked = []

    def ask(c, spec):
        asked.append((c.name, spec.destructive))
        return False

    episode = await Session(
        ScriptedPlanner([call("wipe"), FINISH]), registry, confirm=CallbackConfirmation(ask)
    ).run("x")
    assert asked == [("wipe", True)]
    assert not episode.steps[0].results[0].ok


async def test_exposed_tools_subset_and_unknown(registry):
    planner = ScriptedPlanner([call("set_lamp", on=True), FINISH])
    episode = await Session(planner, registry, tools=["convert"]).run("x")
    assert [t.name for t in planner.requests[0].tools] == ["convert"]
    assert episode.steps[0].error is not None
    with pytest.raises(UsageError, match="not provided"):
        Session(planner, registry, tools=["nope"])


async def test_cancellation_keeps_trace(registry, tmp_path):
    planner = ScriptedPlanner([call("set_lamp", on=True), call("sleep_echo", text="x", delay=10), FINISH])
    session = Session(planner, registry, trace_dir=tmp_path)
    task = asyncio.create_task(session.run("x"))
    # cancel once the second step's slow call is in flight, however loaded the machine is
    async with asyncio.timeout(30):
        while len(planner.requests) < 2:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    episode, complete = read_trace(session.trace_path)
    assert complete and episode.stop_reason == "cancelled"
    assert len(episode.steps) == 1 and episode.steps[0].results[0].ok



async def test_cancellation_while_the_header_is_being_written_still_ends_the_trace(registry, tmp_path):
    """Ctrl-C lands as soon as the trace file exists (what a user, and the CLI test, sees): the
    header write is then still in flight in its thread. The trace must get the header, then
    the "cancelled" end, in that order (the CLI test caught an end-less trace here)."""
    planner = ScriptedPlanner([call("sleep_echo", text="x", delay=10), FINISH])
    session = Session(planner, registry, trace_dir=tmp_path)
    task = asyncio.create_task(session.run("x"))
    while not list(tmp_path.glob("*.jsonl")):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (path,) = tmp_path.glob("*.jsonl")
    kinds = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert kinds[0] == "header" and kinds[-1] == "end"
    episode, complete = read_trace(path)
    assert complete and episode.stop_reason == "cancelled"

class _CancelAsPlanReturns(ScriptedPlanner):
    """Cancels the running session from inside ``plan``, in the loop turn its answer completes:
    the race a Ctrl-C at the end of a step runs into (``asyncio.wait_for`` on 3.11 returns the
    completed result and drops the cancellation, and the run carried on to exit 0)."""

    def __init__(self, actions, cancel_at: int) -> None:
        super().__init__(actions)
        self.cancel_at = cancel_at
        self.task: asyncio.Task | None = None

    async def plan(self, request):
        out = await super().plan(request)
        if len(self.requests) == self.cancel_at:
            asyncio.get_running_loop().call_soon(self.task.cancel)
        return out


async def test_cancellation_as_a_plan_completes_is_not_lost(registry, toys, tmp_path):
    planner = _CancelAsPlanReturns([call("set_lamp", on=True), call("set_lamp", on=False), FINISH], cancel_at=1)
    session = Session(planner, registry, trace_dir=tmp_path)
    planner.task = task = asyncio.create_task(session.run("x"))
    with pytest.raises(asyncio.CancelledError):
        await task
    episode, complete = read_trace(session.trace_path)
    assert complete and episode.stop_reason == "cancelled"
    assert len(planner.requests) == 1  # no second step was planned after the cancellation
    assert len(episode.steps) <= 1


async def test_cancellation_while_the_model_loads_still_writes_a_cancelled_trace(registry, tmp_path):
    class SlowLoad(ScriptedPlanner):
        async def load(self) -> None:
            await asyncio.sleep(10)

    session = Session(SlowLoad([FINISH]), registry, trace_dir=tmp_path)
    task = asyncio.create_task(session.run("x"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    episode, complete = read_trace(session.trace_path)
    assert complete and episode.stop_reason == "cancelled" and episode.steps == []


async def test_cancellation_while_the_verifier_runs_ends_the_trace_once(registry, tmp_path):
    async def verifier(episode):
        await asyncio.sleep(10)

    session = Session(ScriptedPlanner([FINISH]), registry, verifier=verifier, trace_dir=tmp_path)
    task = asyncio.create_task(session.run("x"))
    while not list(tmp_path.glob("*.jsonl")) or "step" not in next(tmp_path.glob("*.jsonl")).read_text():
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    kinds = [json.loads(line)["type"] for line in session.trace_path.read_text().splitlines()]
    assert kinds.count("end") == 1 and kinds[-1] == "end"
    episode, complete = read_trace(session.trace_path)
    assert complete and episode.stop_reason == "cancelled"


async def test_sessions_share_one_loop(registry):
    planners = [ScriptedPlanner([call("sleep_echo", text=str(i), delay=0.3), FINISH]) for i in range(4)]
    t0 = time.monotonic()
    episodes = await asyncio.gather(*(Session(p, registry).run(f"r{i}") for i, p in enumerate(planners)))
    assert all(e.stop_reason == "finish" for e in episodes)
    assert time.monotonic() - t0 < 1.0


async def test_context_has_stable_prefix_then_history(registry):
    planner = ScriptedPlanner([call("set_lamp", on=True), call("set_lamp", on=False), FINISH])
    await Session(planner, registry).run("flip the lamp")
    first, second, third = (r.messages for r in planner.requests)
    assert first[0].role == "system" and first[0] == second[0] == third[0]
    assert first[1].content == "flip the lamp"
    assert second[: len(first)] == first  # history only grows at the end
    assert third[: len(second)] == second
    assert "set_lamp(on: boolean)" in first[0].content


async def test_history_budget_drops_whole_steps_and_says_so(registry):
    from pocketpilot.harness.context import ContextBudget

    long_text = "x" * 400
    planner = ScriptedPlanner([call("sleep_echo", text=long_text)] * 6 + [FINISH])
    cfg = HarnessConfig(budget=ContextBudget(history=300))
    episode = await Session(planner, registry, config=cfg, policies=safety_policies()).run("echo")
    assert episode.stop_reason == "finish"
    last = planner.requests[-1].messages
    assert any("earlier steps are not shown" in m.content for m in last)
    tool_msgs = [m for m in last if m.role == "tool"]
    assert tool_msgs and all(json.loads(m.content)["data"] == long_text for m in tool_msgs)  # never cut inside


async def test_run_sync_refuses_inside_loop(registry):
    with pytest.raises(UsageError):
        Session(ScriptedPlanner([FINISH]), registry).run_sync("x")


def test_run_sync_outside_loop(registry):
    episode = Session(ScriptedPlanner([FINISH]), registry).run_sync("x")
    assert episode.stop_reason == "finish"


class LampBeforeEcho:
    """Gate: echo only after a successful set_lamp in an earlier step (not the same batch)."""

    def check(self, call, batch, history):
        if call.name != "sleep_echo":
            return None
        for step in history:
            if step.action and step.action.kind == "tool_call":
                for c, r in zip(step.action.calls, step.results, strict=False):
                    if c.name == "set_lamp" and r.ok:
                        return None
        return "turn the lamp on first (set_lamp) and wait for its result"


async def test_gates_block_until_precondition_met(registry, toys):
    both = {"kind": "tool_call", "calls": [{"name": "set_lamp", "arguments": {"on": True}},
                                           {"name": "sleep_echo", "arguments": {"text": "hi"}}]}
    planner = ScriptedPlanner([call("sleep_echo", text="hi"), both, call("sleep_echo", text="hi"), FINISH])
    episode = await Session(planner, registry, gates=[LampBeforeEcho()]).run("x")
    first = episode.steps[0].results[0]
    assert first.error.code == "precondition_failed" and "set_lamp" in first.error.message
    batch = episode.steps[1].results
    assert batch[0].ok and batch[1].error.code == "precondition_failed"  # same batch is not "before"
    assert episode.steps[2].results[0].ok
    assert toys.log == ["lamp=True", "echo=hi"]
