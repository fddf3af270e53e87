"""AdbExecutor against simulated phones over the real adb server, adbutils and uiautomator2."""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING

import pytest

from pocketpilot.contracts import ToolCall
from pocketpilot.errors import DeviceTimeout, DeviceUnauthorizedError, UnknownDeviceError
from pocketpilot.executor.adb import AdbExecutor, AdbExecutorConfig, DeviceOutputError, parse_screen
from pocketpilot.executor.simphone import Faults, MiniPhone, dump_xml
from pocketpilot.harness.base import Executor

if TYPE_CHECKING:
    from conftest import SimDevice, SimPhoneFactory

FAST = AdbExecutorConfig(shell_timeout_s=5.0, reconnect_base_delay_s=0.05, reconnect_attempts=6)


def executor_for(dev: SimDevice, config: AdbExecutorConfig = FAST) -> AdbExecutor:
    return AdbExecutor(dev.serial, client=dev.server.client, config=config)


async def call(ex: AdbExecutor, name: str, **arguments: object):  # noqa: ANN201
    return await ex.call(ToolCall(name=name, arguments=arguments))


async def test_settings_tools_match_sandbox_shapes(simphone: SimDevice) -> None:
    async with executor_for(simphone) as ex:
        assert isinstance(ex, Executor)
        settings = (await call(ex, "get_settings")).data
        assert settings == {
            "wifi": True,
            "bluetooth": False,
            "do_not_disturb": False,
            "brightness": 50,
            "ring_mode": "normal",
        }
        assert (await call(ex, "set_wifi", enabled=False)).data == {"wifi": False}
        assert (await call(ex, "set_brightness", level=37)).data == {"brightness": 37}
        assert (await call(ex, "set_ring_mode", mode="vibrate")).data == {"ring_mode": "vibrate"}
        assert (await call(ex, "set_do_not_disturb", enabled=True)).ok
        assert (await call(ex, "set_bluetooth", enabled=True)).ok
        assert (await call(ex, "get_settings")).data == {
            "wifi": False,
            "bluetooth": True,
            "do_not_disturb": True,
            "brightness": 37,
            "ring_mode": "vibrate",
        }
        bad = await call(ex, "set_brightness", level=300)
        assert not bad.ok and bad.error is not None and bad.error.code == "invalid_arguments"
        assert (await call(ex, "nope")).error.code == "unknown_tool"  # type: ignore[union-attr]
        launched = await call(ex, "launch_app", app="Settings")
        assert launched.data == {"foreground": "com.android.settings", "label": "Settings"}
        assert (await call(ex, "get_foreground_app")).data == {
            "package": "com.android.settings",
            "label": "Settings",
        }
        assert (await call(ex, "launch_app", app="Nonexistent")).error.code == "not_found"  # type: ignore[union-attr]


async def test_screen_tools_and_sms(simphone: SimDevice) -> None:
    backend = simphone.backend
    assert isinstance(backend, MiniPhone)
    async with executor_for(simphone) as ex:
        await call(ex, "launch_app", app="com.android.settings")
        screen = await call(ex, "read_screen")
        assert screen.data["package"] == "com.android.settings"
        wifi_line = next(line for line in screen.data["elements"] if "#switch_wifi" in line)
        assert "checked" in wifi_line
        index = int(wifi_line.split("]")[0][1:])
        assert (await call(ex, "tap_element", index=index)).ok
        assert simphone.sim.call(backend.get_setting, "global", "wifi_on") == "0"
        assert (await call(ex, "tap_element", resource_id="switch_bluetooth")).ok
        assert simphone.sim.call(backend.get_setting, "global", "bluetooth_on") == "1"
        assert (await call(ex, "tap_element", text="no such thing")).error.code == "element_not_found"  # type: ignore[union-attr]
        assert (await call(ex, "press_home")).ok
        assert (await call(ex, "get_foreground_app")).data["package"] == "com.android.launcher3"
        sent = await call(ex, "send_sms", to="+1 555 0100", body="on my way")
        assert sent.data == {"to": "+1 555 0100", "number": "+1 555 0100", "status": "sent"}
        assert simphone.sim.call(backend.messages) == [{"to": "+1 555 0100", "body": "on my way"}]
        assert (await call(ex, "launch_app", app="Messages")).ok
        assert (await call(ex, "tap_element", resource_id="start_chat_fab")).ok
        assert (await call(ex, "type_text", text="+1555", resource_id="recipient_text_view")).ok
        assert simphone.sim.call(lambda: backend.fields["recipient"]) == "+1555"
        assert (await call(ex, "press_back")).ok
        assert (await call(ex, "scroll", direction="down")).ok
        shot = await call(ex, "take_screenshot")
        assert base64.b64decode(shot.data["png_base64"]).startswith(b"\x89PNG") and shot.data["width"] == 1080
        observed = await ex.observe()
        assert observed.package == "com.google.android.apps.messaging"
        assert "Start chat" in observed.text()
        health = await ex.health()
        assert health.online and health.ui_server


def test_element_list_from_real_format_xml() -> None:
    phone = MiniPhone()
    screen = parse_screen(dump_xml(phone.ui_tree()))
    assert screen.package == "com.android.launcher3"
    assert [e.text for e in screen.elements] == ["Settings", "Messages"]
    assert screen.find(text="messages") is not None and screen.elements[1].center == (400, 430)
    with pytest.raises(ValueError):
        parse_screen("<html/>")


async def test_malformed_output_is_typed(simphone: SimDevice) -> None:
    simphone.sim.call(simphone.backend.put_setting, "global", "wifi_on", "banana")
    async with executor_for(simphone) as ex:
        result = await call(ex, "get_settings")
        assert not result.ok and result.error is not None and result.error.code == "malformed_output"
        with pytest.raises(DeviceOutputError):
            await asyncio.to_thread(ex.get_settings)


async def test_several_devices_one_loop(simphone_factory: SimPhoneFactory) -> None:
    devices = [simphone_factory() for _ in range(4)]
    executors = [await executor_for(d).connect() for d in devices]
    try:

        async def drive(i: int, ex: AdbExecutor) -> list[str]:
            outs = []
            for j in range(50):
                if j % 5 == 0:
                    await call(ex, "set_brightness", level=(i * 20 + j) % 101)
                res = await ex.shell(f"echo dev{i}-cmd{j}")
                outs.append(res.output.strip())
            return outs

        results = await asyncio.gather(*(drive(i, ex) for i, ex in enumerate(executors)))
        for i, outs in enumerate(results):  # 200 commands: none lost, none crossed
            assert outs == [f"dev{i}-cmd{j}" for j in range(50)]
        for i, dev in enumerate(devices):
            level = (i * 20 + 45) % 101
            assert dev.sim.call(dev.backend.get_setting, "system", "screen_brightness") == str(
                round(level * 255 / 100)
            )
    finally:
        for ex in executors:
            await ex.aclose()


async def test_unknown_serial(adb_server) -> None:  # noqa: ANN001
    with pytest.raises(UnknownDeviceError):
        await AdbExecutor("NOPE123", client=adb_server.client, config=FAST).connect()


async def test_unauthorized_device(simphone_factory: SimPhoneFactory) -> None:
    dev = simphone_factory(faults=Faults(refuse_auth=True), connect=False)
    with pytest.raises(DeviceUnauthorizedError, match="Allow USB debugging"):
        await executor_for(dev).connect()


async def test_slow_device_times_out(simphone: SimDevice) -> None:
    ex = await executor_for(simphone, AdbExecutorConfig(shell_timeout_s=0.5)).connect()
    simphone.faults.delay_s = 2.0
    try:
        with pytest.raises(DeviceTimeout):
            await call(ex, "get_settings")
    finally:
        simphone.faults.delay_s = 0.0
    await ex.aclose()


async def test_drop_mid_session_reconnects_and_retries_idempotent(simphone: SimDevice) -> None:
    async with executor_for(simphone) as ex:
        assert (await call(ex, "set_wifi", enabled=False)).ok
        assert simphone.sim.drop_connections() == 1
        result = await call(ex, "get_settings")  # the drop is found here; reconnect, then retry
        assert result.ok and result.data["wifi"] is False
        assert (await ex.health()).online


class _DroppingPhone(MiniPhone):
    """Cuts the cable right after an SMS is sent: the phone acted, the reply never arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.cut: object = None

    def send_sms(self, to: str, body: str) -> None:
        super().send_sms(to, body)
        if callable(self.cut):
            self.cut()


async def test_journal_prevents_double_send_after_drop(simphone_factory: SimPhoneFactory) -> None:
    backend = _DroppingPhone()
    dev = simphone_factory(backend=backend)
    assert dev.sim.phone is not None
    backend.cut = dev.sim.phone.drop_connections
    async with executor_for(dev) as ex:
        first = await ex.call(
            ToolCall(name="send_sms", arguments={"to": "+15550100", "body": "once"}), idempotency_key="sms-1"
        )
        assert not first.ok and first.error is not None and first.error.code == "outcome_unknown"
        backend.cut = None
        again = await ex.call(
            ToolCall(name="send_sms", arguments={"to": "+15550100", "body": "once"}), idempotency_key="sms-1"
        )
        assert again.error is not None and again.error.code == "outcome_unknown"
        assert dev.sim.call(backend.messages) == [{"to": "+15550100", "body": "once"}]
        entry = ex.journal.get("sms-1")
        assert entry is not None and entry.state == "uncertain" and not entry.idempotent
        assert (await ex.health()).online  # reconnected: the episode can go on
        done = await ex.call(ToolCall(name="set_wifi", arguments={"enabled": True}), idempotency_key="w-1")
        assert (
            await ex.call(ToolCall(name="set_wifi", arguments={"enabled": True}), idempotency_key="w-1")
        ) == done
