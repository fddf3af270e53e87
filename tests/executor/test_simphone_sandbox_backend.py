"""The simulated phone serving the sandbox phone's state; the CLI start/stop functions."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pocketpilot.contracts import ToolCall
from pocketpilot.executor.adb import AdbExecutor, AdbExecutorConfig
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.executor.simphone import default_backend, start_simphone, stop_simphone
from pocketpilot.executor.simphone._sandbox_backend import SandboxBackend

if TYPE_CHECKING:
    from conftest import AdbServer, SimPhoneFactory


def test_default_backend_is_the_sandbox() -> None:
    assert isinstance(default_backend(), SandboxBackend)


async def test_same_tools_same_results_on_sandbox_and_simphone(simphone_factory: SimPhoneFactory) -> None:
    backend = SandboxBackend(SandboxPhone(seed=0))
    dev = simphone_factory(backend=backend)
    reference = SandboxExecutor(SandboxPhone(seed=0))
    calls = [
        ToolCall(name="get_settings"),
        ToolCall(name="set_wifi", arguments={"enabled": False}),
        ToolCall(name="set_bluetooth", arguments={"enabled": False}),
        ToolCall(name="set_brightness", arguments={"level": 35}),
        ToolCall(name="set_ring_mode", arguments={"mode": "silent"}),
        ToolCall(name="set_do_not_disturb", arguments={"enabled": True}),
        ToolCall(name="get_settings"),
        ToolCall(name="launch_app", arguments={"app": "Settings"}),
        ToolCall(name="get_foreground_app"),
    ]
    async with AdbExecutor(dev.serial, client=dev.server.client, config=AdbExecutorConfig()) as ex:
        for c in calls:
            over_adb, in_sandbox = await ex.call(c), await reference.call(c)
            assert over_adb.ok and in_sandbox.ok, (c, over_adb, in_sandbox)
            assert over_adb.data == in_sandbox.data, c.name
        sent = await ex.call(ToolCall(name="send_sms", arguments={"to": "+1-555-0103", "body": "see you"}))
        assert sent.ok
    state = dev.sim.call(lambda: backend.state.model_copy(deep=True))
    assert (
        state.settings.wifi is False
        and state.settings.ring_mode == "silent"
        and state.settings.brightness == 35
    )
    assert state.earbuds.connected is False  # bluetooth off disconnects, as in the sandbox
    assert state.messages.sent[-1].contact == "Bob Martin" and state.messages.sent[-1].body == "see you"
    assert state.foreground_app == "com.android.settings"  # back where the SMS was sent from


def test_start_stop_background_process(tmp_path: Path, adb_server: AdbServer) -> None:
    info = start_simphone(tmp_path / "state", backend="mini")
    try:
        adb_server.connect(info.serial)
        assert (
            adb_server.client.device(info.serial).shell("getprop ro.product.model") == "Pixel 7 (simulated)"
        )
    finally:
        assert stop_simphone(tmp_path / "state")
    assert not (tmp_path / "state" / "simphone.json").exists()
    assert not stop_simphone(tmp_path / "state")


def test_the_new_sandbox_apps_are_listed_and_launchable_on_the_simulated_phone() -> None:
    phone = SandboxPhone(seed=0)
    backend = SandboxBackend(phone)
    catalog = phone.catalog()
    extra = {a.package for a in catalog.apps if a.package} - {a.package for a in phone.state.installed_apps}
    assert {"com.google.android.gm", "com.google.android.apps.walletnfcrel", "com.pocketpilot.bank"} <= extra
    assert extra <= set(backend.packages())
    assert [a.package for a in phone.state.installed_apps] == [
        a.package for a in backend.apps()[1:len(phone.state.installed_apps) + 1]
    ]  # the installed apps come first, unchanged
    icons = {n.text: n for n in backend.ui_tree().walk() if n.action and n.action.startswith("launch:")}
    wallet = icons["Wallet"]
    left, top, right, bottom = wallet.bounds
    backend.tap((left + right) / 2, (top + bottom) / 2)
    assert phone.state.foreground_app == "com.google.android.apps.walletnfcrel"
    assert any(n.text == "Wallet" for n in backend.ui_tree().walk())
