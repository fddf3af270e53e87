"""A device dropped in the middle of a non-idempotent action: the action happens at most once.

The phone acts, then the cable goes before the reply arrives. The planner is told
``outcome_unknown`` and, as small planners do, sends the very same call again (a fresh call,
so a fresh idempotency key): through the tool, and through the UI. The sandbox's sent
messages are the judge.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, Literal

import pytest
from scripted_actions import call_action

from pocketpilot.executor.adb import AdbExecutor, AdbExecutorConfig
from pocketpilot.executor.sandbox import SandboxPhone
from pocketpilot.executor.simphone._sandbox_backend import SandboxBackend
from pocketpilot.executor.tools import tool
from pocketpilot.harness import AllowAll, Session
from pocketpilot.harness.planners.scripted import ScriptedPlanner

_spec = importlib.util.spec_from_file_location(
    "_adv_executor_fixtures", Path(__file__).parents[1] / "executor" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_fixtures = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(_fixtures)
adb_server = _fixtures.adb_server
simphone_factory = _fixtures.simphone_factory

FAST = AdbExecutorConfig(shell_timeout_s=5.0, reconnect_base_delay_s=0.05, reconnect_attempts=4)
FINISH = {"kind": "finish", "summary": "done"}


class _CutAfterSend(SandboxBackend):
    """Records the SMS in the sandbox, then cuts every connection (the first time only)."""

    def __init__(self) -> None:
        super().__init__(SandboxPhone(seed=0))
        self.cut: Any = None

    def send_sms(self, to: str, body: str) -> None:
        super().send_sms(to, body)
        cut, self.cut = self.cut, None
        if callable(cut):
            cut()


def _device(simphone_factory: Any) -> tuple[Any, _CutAfterSend]:
    backend = _CutAfterSend()
    dev = simphone_factory(backend=backend)
    assert dev.sim.phone is not None
    backend.cut = dev.sim.phone.drop_connections
    return dev, backend


def _bodies(dev: Any, backend: _CutAfterSend) -> list[str]:
    return dev.sim.call(lambda: [m.body for m in backend.state.messages.sent])


async def _episode(dev: Any, actions: list[Any]):  # noqa: ANN202
    ex = AdbExecutor(dev.serial, client=dev.server.client, config=FAST)
    try:
        return await Session(ScriptedPlanner([*actions, FINISH]), ex, confirm=AllowAll()).run("text Bob"), ex
    finally:
        await ex.aclose()


async def test_send_retried_after_a_drop_goes_out_once(simphone_factory) -> None:  # noqa: ANN001
    dev, backend = _device(simphone_factory)
    send = call_action("send_sms", to="+15550101", body="pay the rent")
    episode, ex = await _episode(dev, [send, send, call_action("get_settings")])
    first, again, read = (r for _, _, r in episode.tool_calls())
    assert first is not None and first.error is not None and first.error.code == "outcome_unknown"
    assert again is not None and again.error is not None and again.error.code == "outcome_unknown"
    assert read is not None and read.ok  # reconnected: the episode went on
    assert _bodies(dev, backend) == ["pay the rent"]
    assert [e.tool for e in ex.journal.entries()].count("send_sms") == 1  # the retry never reached the phone


async def test_tap_on_send_retried_after_a_drop_goes_out_once(simphone_factory) -> None:  # noqa: ANN001
    dev, backend = _device(simphone_factory)
    tap = call_action("tap_element", text="Send SMS")
    episode, _ = await _episode(dev, [call_action("compose_sms", to="+15550101", body="pay the rent"), tap, tap])
    compose, first, again = (r for _, _, r in episode.tool_calls())
    assert compose is not None and compose.ok
    assert first is not None and first.error is not None and first.error.code == "outcome_unknown"
    assert again is not None and not again.ok
    assert _bodies(dev, backend) == ["pay the rent"]


async def test_a_different_message_after_the_drop_still_goes(simphone_factory) -> None:  # noqa: ANN001
    dev, backend = _device(simphone_factory)
    episode, _ = await _episode(dev, [
        call_action("send_sms", to="+15550101", body="pay the rent"),
        call_action("send_sms", to="+15550101", body="sorry, ignore that if it arrived"),
    ])
    first, second = (r for _, _, r in episode.tool_calls())
    assert first is not None and first.error is not None and first.error.code == "outcome_unknown"
    assert second is not None and second.ok
    assert _bodies(dev, backend) == ["pay the rent", "sorry, ignore that if it arrived"]


# ------------------------------------------------------------ a team's tools, declared by their effect alone


def _team_phone(effect: str) -> type[AdbExecutor]:
    """A team's own tool over the same phone, declared only by what it does (no idempotent=)."""

    class TeamPhone(AdbExecutor):
        @tool(effect=effect)  # type: ignore[arg-type]
        def text_shop(self, to: str, body: str) -> dict[str, Any]:
            """Text an order code to a shop's number (the carrier bills it: a purchase by SMS)."""
            return AdbExecutor.send_sms.fn(self, to, body)

    return TeamPhone


@pytest.mark.parametrize("effect", ["send", "purchase"])
async def test_a_default_declared_send_or_purchase_is_not_resent_after_a_drop(simphone_factory, effect: str) -> None:  # noqa: ANN001
    """The journal resends only idempotent calls; a tool that declared only ``effect`` must
    come out not idempotent, or the reconnect sends the message (and pays) a second time."""
    dev, backend = _device(simphone_factory)
    ex = _team_phone(effect)(dev.serial, client=dev.server.client, config=FAST)
    order = call_action("text_shop", to="+15550101", body="BUY 42")
    try:
        episode = await Session(ScriptedPlanner([order, order, call_action("get_settings"), FINISH]), ex,
                                confirm=AllowAll()).run("order 42")
    finally:
        await ex.aclose()
    assert _bodies(dev, backend) == ["BUY 42"]  # the phone sent it once
    assert [e.tool for e in ex.journal.entries()].count("text_shop") == 1  # the retry never reached it
    first, again, read = (r for _, _, r in episode.tool_calls())
    assert first is not None and first.error is not None and first.error.code == "outcome_unknown"
    assert again is not None and again.error is not None and again.error.code == "outcome_unknown"
    assert read is not None and read.ok  # reconnected: the run went on


async def test_a_send_selected_by_an_argument_is_not_resent_after_a_drop(simphone_factory) -> None:  # noqa: ANN001
    """A tool idempotent as declared (it composes) that sends when its argument says so: the
    journal reads the call's own semantics, not the tool's."""

    class TeamPhone(AdbExecutor):
        @tool(effect="navigate", idempotent=True, effect_by_arg={"action": {"send": "send"}})
        def sms(self, action: Literal["compose", "send"], to: str, body: str) -> dict[str, Any]:
            """Compose a message, or send it."""
            if action == "compose":
                return AdbExecutor.compose_sms.fn(self, to, body)
            return AdbExecutor.send_sms.fn(self, to, body)

    dev, backend = _device(simphone_factory)
    ex = TeamPhone(dev.serial, client=dev.server.client, config=FAST)
    send = call_action("sms", action="send", to="+15550101", body="pay the rent")
    try:
        episode = await Session(ScriptedPlanner([send, send, FINISH]), ex, confirm=AllowAll()).run("text Bob")
    finally:
        await ex.aclose()
    assert _bodies(dev, backend) == ["pay the rent"]
    first, again = (r for _, _, r in episode.tool_calls())
    assert first is not None and first.error is not None and first.error.code == "outcome_unknown"
    assert again is not None and again.error is not None and again.error.code == "outcome_unknown"
