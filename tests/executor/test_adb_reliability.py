"""Reliability through the harness: dropped and killed devices, malformed output, many devices at once.

The scripted episodes here test the executor, not the harness: they run under the safety policies only.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from scripted_actions import call_action

from pocketpilot.contracts import Step, ToolCall
from pocketpilot.errors import DeviceOfflineError
from pocketpilot.executor.adb import AdbExecutor, AdbExecutorConfig
from pocketpilot.executor.simphone import MiniPhone
from pocketpilot.harness import AllowAll, Session, safety_policies
from pocketpilot.harness.planners.scripted import ScriptedPlanner

if TYPE_CHECKING:
    from conftest import SimDevice, SimPhoneFactory

FAST = AdbExecutorConfig(shell_timeout_s=5.0, reconnect_base_delay_s=0.05, reconnect_attempts=3)


class CountingPhone(MiniPhone):
    """Counts every state change that reaches the phone, so a double execution shows."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: Counter[tuple[str, str, str]] = Counter()
        self.cut_after_sms: Any = None

    def put_setting(self, namespace: str, key: str, value: str) -> None:
        self.puts[(namespace, key, value)] += 1
        super().put_setting(namespace, key, value)

    def send_sms(self, to: str, body: str) -> None:
        super().send_sms(to, body)
        if callable(self.cut_after_sms):
            self.cut_after_sms()  # the phone acted; the reply is lost with the connection


def executor(dev: SimDevice) -> AdbExecutor:
    return AdbExecutor(dev.serial, client=dev.server.client, config=FAST)


async def test_dropped_mid_episode_resumes_without_double_execution(
    simphone_factory: SimPhoneFactory,
) -> None:
    backend = CountingPhone()
    dev = simphone_factory(backend=backend)
    assert dev.sim.phone is not None

    def on_step(step: Step) -> None:
        if step.index == 0:
            dev.sim.drop_connections()  # the cable goes between two steps
            backend.cut_after_sms = dev.sim.phone.drop_connections  # ... and again while the SMS goes out
        if step.index == 2:
            backend.cut_after_sms = None

    planner = ScriptedPlanner(
        [
            call_action("set_brightness", level=30),
            call_action("set_wifi", enabled=False),
            call_action("send_sms", to="+15550100", body="running late"),
            call_action("get_settings"),
            {"kind": "finish", "summary": "done"},
        ]
    )
    ex = executor(dev)
    session = Session(planner, ex, confirm=AllowAll(), on_step=on_step, policies=safety_policies())
    episode = await session.run("dim, wifi off, text")
    assert episode.stop_reason == "finish"
    dim, wifi, sms, read = (r for _, _, r in episode.tool_calls())
    assert dim is not None and dim.ok
    assert wifi is not None and wifi.ok  # the drop was found here: reconnected, idempotent, retried
    assert sms is not None and sms.error is not None and sms.error.code == "outcome_unknown"
    assert read is not None and read.ok and read.data["wifi"] is False  # the episode went on
    assert dev.sim.call(backend.messages) == [{"to": "+15550100", "body": "running late"}]  # sent once
    assert dev.sim.call(lambda: backend.puts[("system", "screen_brightness", "76")]) == 1
    assert dev.sim.call(lambda: backend.puts[("global", "wifi_on", "0")]) == 1
    states = [(e.tool, e.state, e.attempts) for e in ex.journal.entries()]
    assert states == [
        ("set_brightness", "done", 1),
        ("set_wifi", "done", 2),
        ("send_sms", "uncertain", 1),
        ("get_settings", "done", 1),
    ]
    await ex.aclose()


async def test_device_killed_mid_episode_ends_with_device_lost(simphone_factory: SimPhoneFactory) -> None:
    backend = CountingPhone()
    dev = simphone_factory(backend=backend)

    def on_step(step: Step) -> None:
        if step.index == 0:
            dev.sim.stop()  # the phone is gone for good

    planner = ScriptedPlanner(
        [
            call_action("set_brightness", level=30),
            call_action("set_wifi", enabled=False),
            {"kind": "finish", "summary": "x"},
        ]
    )
    ex = executor(dev)
    episode = await Session(planner, ex, on_step=on_step, policies=safety_policies()).run("dim and wifi off")
    assert episode.stop_reason == "device_lost"
    assert dev.serial in episode.stop_detail and "did not come back" in episode.stop_detail
    assert len(episode.steps) == 2 and planner.remaining == 1  # nothing ran after the loss
    assert episode.steps[1].results == []
    assert backend.puts[("global", "wifi_on", "0")] == 0
    entry = ex.journal.entries()[-1]
    assert entry.tool == "set_wifi" and entry.state == "uncertain"
    with pytest.raises(DeviceOfflineError):
        await ex.call(ToolCall(name="get_settings"))


class GarbledPhone(MiniPhone):
    """A phone whose settings provider prints garbage (two lines for one value)."""

    def get_setting(self, namespace: str, key: str) -> str | None:
        if key == "screen_brightness":
            return "12\n34"
        return super().get_setting(namespace, key)


async def test_malformed_output_is_a_typed_tool_failure_in_the_episode(
    simphone_factory: SimPhoneFactory,
) -> None:
    dev = simphone_factory(backend=GarbledPhone())
    planner = ScriptedPlanner(
        [call_action("get_settings"), call_action("set_wifi", enabled=False), {"kind": "finish", "summary": "x"}]
    )
    episode = await Session(planner, executor(dev), policies=safety_policies()).run("settings?")
    garbled, wifi = (r for _, _, r in episode.tool_calls())
    assert garbled is not None and garbled.error is not None and garbled.error.code == "malformed_output"
    assert "settings get" in garbled.error.message
    assert wifi is not None and wifi.ok and episode.stop_reason == "finish"


async def test_200_mixed_commands_across_four_devices(simphone_factory: SimPhoneFactory) -> None:
    devices = [simphone_factory(backend=MiniPhone(serial=f"SIM{i}")) for i in range(4)]
    executors = [await executor(d).connect() for d in devices]

    async def drive(i: int, ex: AdbExecutor) -> list[str]:
        problems: list[str] = []
        for j in range(10):  # 5 commands per round, 10 rounds, 4 devices: 200 commands
            level = (i * 25 + j * 7) % 101
            tag = f"dev{i}-{j}"
            echo, setting = await asyncio.gather(
                ex.shell(f"echo {tag}"), ex.call(ToolCall(name="set_brightness", arguments={"level": level}))
            )
            if echo.output.strip() != tag or setting.data != {"brightness": level}:
                problems.append(f"{tag}: {echo.output!r} {setting}")
            read = await ex.call(ToolCall(name="get_settings"))
            if read.data["brightness"] != level:
                problems.append(f"{tag}: read back {read.data}, expected {level}")
            screen, prop = await asyncio.gather(
                ex.call(ToolCall(name="get_foreground_app")), ex.shell("getprop ro.serialno")
            )
            if not screen.ok or prop.output.strip() != f"SIM{i}":
                problems.append(f"{tag}: {screen} {prop.output!r}")
        return problems

    try:
        problems = await asyncio.gather(*(drive(i, ex) for i, ex in enumerate(executors)))
        assert problems == [[], [], [], []]
        for i, (dev, ex) in enumerate(zip(devices, executors, strict=True)):
            entries = ex.journal.entries()
            assert len(entries) == 30 and all(e.state == "done" and e.serial == dev.serial for e in entries)
            last = (i * 25 + 9 * 7) % 101
            assert dev.sim.call(dev.backend.get_setting, "system", "screen_brightness") == str(
                round(last * 255 / 100)
            )
    finally:
        for ex in executors:
            await ex.aclose()
