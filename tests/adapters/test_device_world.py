"""A device's tools carry the world they implement, so the skills written for it gate them by
declaration (never by a name a foreign tool may share)."""

from __future__ import annotations

import adbutils

from pocketpilot.evaluation.task_episode import load_harness_kit
from pocketpilot.executor.adb import AdbExecutor
from pocketpilot.executor.sandbox.phone import SANDBOX_WORLD
from pocketpilot.executor.tools import ToolRegistry, tool


def test_the_adb_device_declares_the_phone_world_and_gets_its_gates() -> None:
    executor = AdbExecutor("emulator-5554", client=adbutils.AdbClient(host="127.0.0.1", port=1))  # never connected
    specs = executor.tools()
    assert {s.world for s in specs} == {SANDBOX_WORLD}
    kit = load_harness_kit()
    assert kit.gates_for(specs), "the phone's skills gate the device's tools"

    @tool(effect="setting", setting="wifi")
    def set_wifi(enabled: bool) -> dict:
        """A team's own Wi-Fi switch with a namesake on the phone."""
        return {"wifi": enabled}

    assert kit.gates_for(ToolRegistry([set_wifi]).tools()) == []
