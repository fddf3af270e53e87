"""The scope guard: a device setting nothing in the run's context names stays as it is."""

from __future__ import annotations

from scripted_actions import call

from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, CallbackConfirmation, HarnessConfig, Session, safety_policies
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.harness.scope import is_setting, out_of_scope, setting_terms

FINISH = {"kind": "finish", "summary": "done"}
SETTINGS = ["set_wifi", "set_bluetooth", "set_do_not_disturb", "set_brightness", "set_ring_mode",
            "connect_earbuds", "set_noise_control", "get_earbuds_status", "set_alarm_enabled", "list_alarms"]
GUARD = HarnessConfig()


def _specs():
    return {t.name: t for t in SandboxExecutor(SandboxPhone()).tools()}


def test_setting_tools_and_their_terms():
    specs = _specs()
    assert is_setting(specs["set_wifi"]) and is_setting(specs["set_ring_mode"])
    assert not is_setting(specs["set_alarm_enabled"])  # changes a record by id, not a setting
    assert not is_setting(specs["send_sms"])
    assert "wifi" in setting_terms(specs["set_wifi"])  # "Wi-Fi" joined
    assert {"vibrate", "silent"} <= setting_terms(specs["set_ring_mode"])  # enum values
    assert "not" not in setting_terms(specs["set_do_not_disturb"])  # "do-not-disturb" is not grounded by "not"
    assert out_of_scope(specs["set_wifi"], ["Turn on do not disturb."])
    assert not out_of_scope(specs["set_wifi"], ["Switch off Wi-Fi and bluetooth."])
    assert not out_of_scope(specs["set_ring_mode"], ["Put the phone on vibrate."])
    assert not out_of_scope(specs["set_brightness"], ["Dim the screen to 10."])
    assert out_of_scope(specs["set_do_not_disturb"], ["If not, leave it."])
    assert not out_of_scope(specs["send_sms"], ["Turn on do not disturb."])  # not a setting: never held


async def test_an_unmentioned_setting_is_held_and_the_asked_one_runs():
    phone = SandboxPhone()
    wifi_before = phone.state.settings.wifi
    planner = ScriptedPlanner([call("set_do_not_disturb", enabled=True), call("set_wifi", enabled=not wifi_before), FINISH])
    episode = await Session(planner, SandboxExecutor(phone), tools=SETTINGS, confirm=AllowAll(), config=GUARD).run(
        "I'm heading into a meeting, turn on do not disturb.")
    assert episode.steps[0].results[0].ok and phone.state.settings.do_not_disturb is True
    held = episode.steps[1].results[0]
    assert held.error.code == "not_allowed" and "set_wifi" in held.error.message
    assert phone.state.settings.wifi == wifi_before
    # without the policy (bare mode's safety set) the same call runs
    phone2 = SandboxPhone()
    planner2 = ScriptedPlanner([call("set_do_not_disturb", enabled=True), call("set_wifi", enabled=not wifi_before), FINISH])
    await Session(planner2, SandboxExecutor(phone2), tools=SETTINGS, confirm=AllowAll(), policies=safety_policies()).run(
        "I'm heading into a meeting, turn on do not disturb.")
    assert phone2.state.settings.wifi != wifi_before


async def test_recalled_memories_and_error_messages_ground_a_setting():
    phone = SandboxPhone()
    planner = ScriptedPlanner([call("set_wifi", enabled=True), FINISH])
    await Session(planner, SandboxExecutor(phone), tools=SETTINGS, confirm=AllowAll(), config=GUARD,
                  evidence=["Recalled memories: - Home routine: wifi on, do not disturb off."]).run(
        "I'm home now, do the home routine I asked for.")
    assert phone.state.settings.wifi is True
    # earbuds need Bluetooth: the connect error names it, so turning Bluetooth on is in scope
    phone2 = SandboxPhone()
    phone2.state.settings.bluetooth = False
    planner2 = ScriptedPlanner([call("connect_earbuds"), call("set_bluetooth", enabled=True), call("connect_earbuds"), FINISH])
    episode = await Session(planner2, SandboxExecutor(phone2), tools=SETTINGS, confirm=AllowAll(), config=GUARD).run(
        "Connect my buds.")
    assert out_of_scope(_specs()["set_bluetooth"], ["Connect my buds."])  # the request alone does not name it
    assert not episode.steps[0].results[0].ok and "luetooth" in episode.steps[0].results[0].error.message
    assert episode.steps[1].results[0].ok and phone2.state.settings.bluetooth is True


async def test_the_holds_own_notice_does_not_ground_the_identical_retry():
    """The hold names the call it held ("set_wifi: ..."): that is the harness talking, not the world.

    Sent again, the call is not let through on the hold's words: it is put to the user (who says
    no here), once, and every later send of it stays denied.
    """
    phone = SandboxPhone()
    wifi_before = phone.state.settings.wifi
    retry = call("set_wifi", enabled=not wifi_before)
    asked = []

    async def no(c, spec):
        asked.append(c.name)
        return False

    planner = ScriptedPlanner([call("set_do_not_disturb", enabled=True), retry, retry, retry, FINISH])
    episode = await Session(planner, SandboxExecutor(phone), tools=SETTINGS, confirm=CallbackConfirmation(no),
                            config=GUARD).run("I'm heading into a meeting, turn on do not disturb.")
    held = [s.results[0] for s in episode.steps[1:4]]
    assert [r.error.code for r in held] == ["not_allowed", "confirmation_denied", "confirmation_denied"]
    assert "wifi" in held[0].error.message.lower()  # the notice does mention it: only its source disqualifies it
    assert asked == ["set_wifi"]
    assert phone.state.settings.wifi == wifi_before


async def test_an_unnamed_prerequisite_before_the_asked_change_runs():
    """The walk comes after the asked change: a setting before it is a prerequisite, not a walk."""
    phone = SandboxPhone()
    wifi_before = phone.state.settings.wifi
    planner = ScriptedPlanner([call("set_wifi", enabled=not wifi_before), call("set_do_not_disturb", enabled=True),
                               call("set_bluetooth", enabled=not phone.state.settings.bluetooth), FINISH])
    episode = await Session(planner, SandboxExecutor(phone), tools=SETTINGS, confirm=AllowAll(), config=GUARD).run(
        "I'm heading into a meeting, turn on do not disturb.")
    assert episode.steps[0].results[0].ok and phone.state.settings.wifi != wifi_before
    assert episode.steps[1].results[0].ok
    assert episode.steps[2].results[0].error.code == "not_allowed"  # after the asked change: held
