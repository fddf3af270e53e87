"""A tool that reads or writes by an argument is judged call by call, by every consumer.

``talkback(action=query)`` reads; ``talkback(action=enable)`` changes a setting. The scope
guard, the confirmation, the verifier's "last state-changing call", the handoff review and
the loop guard all read the semantics the argument selects (``spec_for_call``), so a query
is never held, confirmed or counted as a change, and an enable is gated like any setting.
"""

from __future__ import annotations

from typing import Any, Literal

from scripted_actions import call

from pocketpilot.contracts import (
    Episode,
    EpisodeHeader,
    PlannerInfo,
    Step,
    ToolCall,
    ToolCallAction,
    ToolResult,
    ToolSpec,
)
from pocketpilot.errors import ToolFailure
from pocketpilot.executor.tools import Tool, ToolRegistry, tool
from pocketpilot.handoff import review_handoff
from pocketpilot.harness import AllowAll, CallbackConfirmation, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks.spec import LastCallCriterion
from pocketpilot.tasks.verify import check_criterion

FINISH = {"kind": "finish", "summary": "done"}


class Accessibility:
    """A screen reader switched and read through one tool, and the brightness."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {"talkback": False, "brightness": 60}
        self.calls: list[str] = []

    @tool(effect="setting", setting="talkback",
          effect_by_arg={"action": {"query": "read", "enable": "setting", "disable": "setting"}})
    def talkback(self, action: Literal["query", "enable", "disable"]) -> dict[str, Any]:
        """Read whether TalkBack (spoken feedback) is on, or switch it on or off."""
        self.calls.append(f"talkback:{action}")
        if action != "query":
            self.state["talkback"] = action == "enable"
        return {"talkback": self.state["talkback"]}

    @tool(effect="setting", setting="brightness")
    def set_brightness(self, level: int) -> dict[str, Any]:
        """Set the screen brightness in percent."""
        self.calls.append(f"brightness:{level}")
        self.state["brightness"] = level
        return {"brightness": level}


async def test_the_scope_guard_lets_a_query_through_and_holds_an_unasked_enable() -> None:
    app = Accessibility()
    planner = ScriptedPlanner([call("set_brightness", level=30), call("talkback", action="enable"),
                               call("talkback", action="query"), FINISH])
    episode = await Session(planner, ToolRegistry.from_object(app), confirm=AllowAll()).run("Dim the screen to 30%.")
    brightness, enable, query = (r for _, _, r in episode.tool_calls())
    assert brightness is not None and brightness.ok
    assert enable is not None and enable.error is not None and enable.error.code == "not_allowed"  # unasked
    assert query is not None and query.ok and query.data == {"talkback": False}  # a read: never out of scope
    assert app.state == {"talkback": False, "brightness": 30}
    assert app.calls == ["brightness:30", "talkback:query"]


async def test_a_query_is_not_a_change_for_the_verifier_and_an_enable_is() -> None:
    app = Accessibility()
    registry = ToolRegistry.from_object(app)
    last_is_brightness = LastCallCriterion(tool="set_brightness")
    for then, passes in (("query", True), ("enable", False)):
        planner = ScriptedPlanner([call("set_brightness", level=30), call("talkback", action=then), FINISH])
        episode = await Session(planner, registry, confirm=AllowAll()).run("Dim the screen and switch TalkBack on.")
        assert all(r is not None and r.ok for _, _, r in episode.tool_calls()), then
        verdict = check_criterion(last_is_brightness, {}, {}, episode)
        assert verdict.passed is passes, (then, verdict.detail)


def _wallet(paid: list[float]) -> Tool:
    def wallet(action: str, amount: float = 0.0) -> dict[str, Any]:
        if action == "pay":
            paid.append(amount)
        return {"balance": 100.0 - sum(paid)}

    schema = {"type": "object", "properties": {"action": {"enum": ["balance", "pay"]}, "amount": {"type": "number"}},
              "required": ["action"]}
    return Tool.from_schema("wallet", schema, wallet, description="Read the wallet's balance, or pay from it.",
                            effect="purchase", open_world=True, effect_by_arg={"action": {"balance": "read"}})


async def test_only_the_value_that_pays_asks_for_confirmation() -> None:
    paid: list[float] = []
    asked: list[dict[str, Any]] = []

    def answer(c: ToolCall, spec: ToolSpec) -> bool:
        asked.append(c.arguments)
        return False

    planner = ScriptedPlanner([call("wallet", action="balance"), call("wallet", action="pay", amount=5.0), FINISH])
    episode = await Session(planner, ToolRegistry([_wallet(paid)]), confirm=CallbackConfirmation(answer)).run(
        "Check my balance, then pay 5.")
    balance, pay = (r for _, _, r in episode.tool_calls())
    assert balance is not None and balance.ok and balance.data == {"balance": 100.0}
    assert pay is not None and pay.error is not None and pay.error.code == "confirmation_denied"
    assert asked == [{"action": "pay", "amount": 5.0}] and paid == []


def _episode(tools: list[ToolSpec], calls: list[ToolCall], results: list[ToolResult]) -> Episode:
    header = EpisodeHeader(episode_id="e1", request="check TalkBack", planner=PlannerInfo(backend="scripted", model="-"),
                           tools=tools)
    step = Step(index=0, context_digest="", action=ToolCallAction(calls=calls), results=results)
    return Episode(header=header, steps=[step], stop_reason="finish")


def test_a_failed_query_does_not_fail_a_handoff_and_a_failed_enable_does() -> None:
    spec = ToolRegistry.from_object(Accessibility())["talkback"].spec
    failed = ToolResult.failure("unavailable", "the screen reader service is not running")
    worked = ToolResult.success({"enabled": False})
    query = ToolCall(name="talkback", arguments={"action": "query"})
    # a second call that worked: a child whose every call failed did no work (issue 35), whatever they were
    queried = _episode([spec], [query, ToolCall(name="talkback", arguments={"action": "query", "x": 1})], [failed, worked])
    enable = _episode([spec], [ToolCall(name="talkback", arguments={"action": "enable"}), query], [failed, worked])
    assert review_handoff(queried).confirmed and review_handoff(queried).failed == []
    judged = review_handoff(enable)
    assert not judged.confirmed and [f.tool for f in judged.failed] == ["talkback"]
    alone = review_handoff(_episode([spec], [query], [failed]))  # the failed query is no failed write, nor work
    assert alone.failed == [] and not alone.confirmed and alone.code == "subagent_no_call"


async def test_a_query_does_not_reset_the_loop_guards_count_of_rejections() -> None:
    """A successful change resets the loop guard's count of a rejected call (the world moved
    on); a successful query changes nothing, so the stubborn call stays held."""
    tries: list[int] = []

    @tool(effect="update")
    def flaky(x: int) -> None:
        """Update the remote flag."""
        tries.append(x)
        raise ToolFailure("rejected", "the remote refused")

    app = Accessibility()
    tools = [flaky, *(ToolRegistry.from_object(app)[n] for n in ("talkback", "set_brightness"))]
    again = call("flaky", x=1)
    query = call("talkback", action="query")
    planner = ScriptedPlanner([again, again, again, query, again, FINISH])
    await Session(planner, ToolRegistry(tools), confirm=AllowAll()).run("Flip the remote flag.")
    assert len(tries) == 3  # the fourth try after the query never reached the world


def test_the_prompt_says_which_values_of_the_argument_need_confirmation() -> None:
    """The planner reads from its tool list which calls will ask the user; with an argument
    that selects the effect, that is a property of the value, not of the tool."""
    from pocketpilot.harness.context import render_tool

    @tool(effect="setting", setting="vault", effect_by_arg={"action": {"wipe": "delete"}})
    def vault(action: Literal["lock", "unlock", "wipe"]) -> None:
        """Lock, unlock or wipe the vault."""

    pays = render_tool(_wallet([]).spec)
    assert pays.endswith("[needs user confirmation, except action=balance]")
    assert render_tool(vault.spec).endswith("[needs user confirmation for action=wipe]")
    assert "needs user confirmation" not in render_tool(ToolRegistry.from_object(Accessibility())["talkback"].spec)
