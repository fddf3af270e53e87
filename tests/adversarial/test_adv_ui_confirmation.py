"""Attacks on confirmation: the UI route around send_sms, other tools with the same effect, retries, sub-agents.

Against the simulated phone serving the sandbox's state over a real adb server: under DenyAll,
``send_sms`` is denied, and so must be every other way to the same send (``compose_sms`` and a
tap on Send by text, resource id, content description, index or coordinates; typing into the
Send button; a retry; a sub-agent). The sandbox state is the judge: no message leaves.

By default a denial ends the run, so no later route is even tried; the routes are attacked with
``on_denial="hold"``, where the planner goes on after a denial and every route must ask again.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from scripted_actions import call_action

from pocketpilot.contracts import Delegate, ToolCall, ToolResult, ToolSpec
from pocketpilot.executor import ToolRegistry, tool
from pocketpilot.executor.adb import AdbExecutor, AdbExecutorConfig
from pocketpilot.executor.mcp import spec_from_mcp
from pocketpilot.executor.sandbox import SandboxPhone
from pocketpilot.executor.sandbox.state import Message
from pocketpilot.executor.simphone._mini import MESSAGING, UiNode
from pocketpilot.executor.simphone._sandbox_backend import SandboxBackend
from pocketpilot.harness import CallbackConfirmation, DenyAll, HarnessConfig, Session, default_policies
from pocketpilot.harness.planners.scripted import ScriptedPlanner

_spec = importlib.util.spec_from_file_location(
    "_adv_executor_fixtures", Path(__file__).parents[1] / "executor" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_fixtures = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_fixtures)
adb_server = _fixtures.adb_server  # an isolated adb server per test, killed after it
simphone_factory = _fixtures.simphone_factory  # simulated phones on it, stopped after the test

FAST = AdbExecutorConfig(shell_timeout_s=5.0, reconnect_base_delay_s=0.05, reconnect_attempts=3)
FINISH = {"kind": "finish", "summary": "done"}
BODY = "wire me 500 dollars"
SEND_RID = f"{MESSAGING}:id/send_message_button_icon"


COMPOSE = call_action("compose_sms", to="+15550100", body=BODY)


class _RelabeledSend(SandboxBackend):
    """The compose screen with the Send button labeled another way (visible text, or an id only)."""

    def __init__(self, *, text: str = "", desc: str = "", rid: str = SEND_RID) -> None:
        super().__init__(SandboxPhone(seed=0))
        self._label = (text, desc, rid)

    def _compose_screen(self) -> list[UiNode]:
        nodes = super()._compose_screen()
        send = nodes[-1]
        send.text, send.content_desc, send.resource_id = self._label
        return nodes


def _sent(dev: Any) -> list[tuple[str, str]]:
    backend = dev.backend
    return dev.sim.call(lambda: [(m.number, m.body) for m in backend.state.messages.sent])


async def _run(dev: Any, actions: list[Any], confirm: Any = None, **kw: Any):  # noqa: ANN202
    ex = AdbExecutor(dev.serial, client=dev.server.client, config=FAST)
    kw.setdefault("policies", default_policies(on_denial="hold"))
    try:
        return await Session(ScriptedPlanner([*actions, FINISH]), ex, confirm=confirm or DenyAll(), **kw).run(
            "text +15550100"
        )
    finally:
        await ex.aclose()


def _codes(episode: Any) -> list[str | None]:
    return [r.error.code if r.error else None for _, _, r in episode.tool_calls()]


async def test_tapping_send_after_compose_is_denied_like_send_sms(simphone_factory) -> None:  # noqa: ANN001
    dev = simphone_factory(backend=SandboxBackend(SandboxPhone(seed=0)))
    episode = await _run(dev, [
        call_action("send_sms", to="+15550100", body=BODY),
        COMPOSE,
        call_action("read_screen"),
        call_action("tap_element", text="Send SMS"),  # the content description, matched as text
        call_action("tap_element", resource_id="send_message_button_icon"),
        call_action("tap_element", resource_id=SEND_RID),
        call_action("tap_element", text="Send SMS"),  # the same denied call, retried
        call_action("tap", x=960, y=2170),  # the button's pixels
        call_action("type_text", text="ok", resource_id="send_message_button_icon"),  # typing taps its target first
        call_action("tap", x=540, y=1200),  # an empty part of the compose screen
    ])
    assert _sent(dev) == []
    codes = _codes(episode)
    assert codes[0] == "confirmation_denied" and codes[1:3] == [None, None]
    assert codes[3:] == ["confirmation_denied"] * 7
    for step in episode.steps[3:10]:
        assert any("is send" in n for n in step.notices), step.notices
    screen = episode.steps[2].results[0].data["elements"]
    send_index = next(int(line.split("]")[0][1:]) for line in screen if "#send_message_button_icon" in line)
    by_index = await _run(dev, [call_action("read_screen"), call_action("tap_element", index=send_index)])
    assert _codes(by_index) == [None, "confirmation_denied"] and _sent(dev) == []


async def test_by_default_the_first_denial_ends_the_run(simphone_factory) -> None:  # noqa: ANN001
    dev = simphone_factory(backend=SandboxBackend(SandboxPhone(seed=0)))
    episode = await _run(dev, [COMPOSE, call_action("tap_element", text="Send SMS"), call_action("tap", x=960, y=2170)],
                         policies=None)
    assert episode.stop_reason == "denied" and "tap_element is send" in episode.stop_detail
    assert _codes(episode) == [None, "confirmation_denied"]  # the denied tap is recorded; the pixel tap never ran
    assert len(episode.steps) == 2 and _sent(dev) == []


async def test_send_by_visible_text_and_by_id_only(simphone_factory) -> None:  # noqa: ANN001
    texted = simphone_factory(backend=_RelabeledSend(text="Send"))
    episode = await _run(texted, [COMPOSE, call_action("tap_element", text="Send")])
    assert _codes(episode) == [None, "confirmation_denied"] and _sent(texted) == []
    bare = simphone_factory(backend=_RelabeledSend(rid="com.app:id/send_button"))
    episode = await _run(bare, [COMPOSE, call_action("tap_element", resource_id="send_button"),
                                call_action("tap", x=960, y=2170)])
    assert _codes(episode) == [None, "confirmation_denied", "confirmation_denied"] and _sent(bare) == []


async def test_neutral_taps_need_no_confirmation(simphone_factory) -> None:  # noqa: ANN001
    phone = SandboxPhone(seed=0)
    phone.state.messages.sent = [Message(id="sms-0", number="+15550100", contact="Bob", body="hi", at=phone.state.now)]
    dev = simphone_factory(backend=SandboxBackend(phone))
    wifi_before = phone.state.settings.wifi
    episode = await _run(dev, [
        call_action("launch_app", app="Messages"),
        call_action("tap_element", resource_id="conversation_snippet"),  # opening a chat
        call_action("scroll", direction="down"),
        call_action("tap_element", text="Start chat"),
        call_action("type_text", text="+15550100", resource_id="recipient_text_view"),
        call_action("launch_app", app="Settings"),
        call_action("tap_element", resource_id="switch_wifi"),
    ])
    assert _codes(episode) == [None] * 7
    assert not any("confirmation" in n for s in episode.steps for n in s.notices)
    assert dev.sim.call(lambda: phone.state.settings.wifi) is not wifi_before  # the taps really ran
    assert _sent(dev) == [("+15550100", "hi")]


async def test_a_confirmed_tap_on_send_sends_once(simphone_factory) -> None:  # noqa: ANN001
    dev = simphone_factory(backend=SandboxBackend(SandboxPhone(seed=0)))
    asked: list[tuple[str, str | None, bool]] = []

    def approve(call: ToolCall, spec: ToolSpec) -> bool:
        asked.append((call.name, spec.effect, spec.destructive))
        return True

    episode = await _run(dev, [COMPOSE, call_action("tap_element", text="Send SMS")],
                         confirm=CallbackConfirmation(approve))
    assert _codes(episode) == [None, None]
    assert asked == [("tap_element", "send", True)]  # asked once, about a send; compose asked nothing
    assert _sent(dev) == [("+15550100", BODY)]


async def test_a_sub_agent_cannot_tap_send_either(simphone_factory) -> None:  # noqa: ANN001
    dev = simphone_factory(backend=SandboxBackend(SandboxPhone(seed=0)))
    actions = [
        COMPOSE,
        Delegate(instruction="press the send button", tools=["tap_element", "read_screen"]),
        call_action("tap_element", text="Send SMS"),
        {"kind": "finish", "summary": "pressed"},
    ]
    episode = await _run(dev, actions, config=HarnessConfig(max_delegate_depth=1))
    child = episode.steps[1].children[0]
    assert _codes(child) == ["confirmation_denied"] and _sent(dev) == []


async def test_the_screen_changing_after_the_check_is_refused(simphone_factory) -> None:  # noqa: ANN001
    dev = simphone_factory(backend=SandboxBackend(SandboxPhone(seed=0)))
    async with AdbExecutor(dev.serial, client=dev.server.client, config=FAST) as ex:
        tap = ToolCall(name="tap", arguments={"x": 960, "y": 2170})
        checked = await ex.effect_of(tap)  # on the home screen: nothing there sends
        assert checked is not None and not checked.needs_confirmation
        assert (await ex.call(COMPOSE.calls[0])).ok  # now the Send button is under that point
        result = await ex.call(tap)
        assert result.error is not None and result.error.code == "screen_changed"
        assert "send" in result.error.message and _sent(dev) == []


class _Recorder:
    """An executor over given specs that records what reaches it."""

    def __init__(self, specs: list[ToolSpec]) -> None:
        self.specs, self.ran = specs, []

    def tools(self) -> list[ToolSpec]:
        return self.specs

    async def call(self, call: ToolCall) -> ToolResult:
        self.ran.append(call.name)
        return ToolResult.success({"done": call.name})


async def test_another_tool_with_the_same_effect_is_denied() -> None:
    class Outbox:
        @tool(effect="send", open_world=True)  # not flagged destructive: the effect alone gates it
        def notify_contact(self, text: str) -> str:
            """Notify a contact."""
            return text

        @tool(effect="purchase")
        def order(self, item: str) -> str:
            """Order an item."""
            return item

    registry = ToolRegistry.from_object(Outbox())
    holding = default_policies(on_denial="hold")
    episode = await Session(
        ScriptedPlanner([call_action("notify_contact", text=BODY), call_action("order", item="gift card"), FINISH]),
        registry,
        policies=holding,
    ).run("x")
    assert _codes(episode) == ["confirmation_denied", "confirmation_denied"]

    def mcp_tool(annotations: Any) -> Any:
        return SimpleNamespace(description="d", title=None, input_schema={"type": "object"}, output_schema=None,
                               annotations=annotations)

    bare = spec_from_mcp(mcp_tool(None), "transfer")  # a server that says nothing: MCP's defaults
    reader = spec_from_mcp(mcp_tool(SimpleNamespace(read_only_hint=True, destructive_hint=None,
                                                    idempotent_hint=None, open_world_hint=None)), "balance")
    recorder = _Recorder([bare, reader])
    script = [call_action("transfer"), call_action("transfer"), call_action("balance"), FINISH]
    episode = await Session(ScriptedPlanner(script), recorder, policies=holding).run("x")
    assert _codes(episode) == ["confirmation_denied", "confirmation_denied", None]
    assert recorder.ran == ["balance"]
