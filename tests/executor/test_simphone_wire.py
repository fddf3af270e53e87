"""The simulated phone through the real adb server, adbutils and uiautomator2."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

import uiautomator2

from pocketpilot.executor.simphone import MiniPhone

if TYPE_CHECKING:
    from conftest import SimDevice


def test_adb_cli_lists_and_runs_shell(simphone: SimDevice) -> None:
    out = simphone.server.run("devices", "-l")
    assert f"{simphone.serial}" in out.stdout and "device product:simphone" in out.stdout
    res = simphone.server.run("-s", simphone.serial, "shell", "echo hi; false")  # CLI uses shell v2
    assert res.stdout == "hi\n" and res.returncode == 1


def test_shell_v1_and_v2_exit_codes(simphone: SimDevice) -> None:
    d = simphone.device
    v2 = d.shell2("echo out; cat /nope", v2=True)
    assert (v2.returncode, v2.stdout, v2.stderr) == (1, "out\n", "cat: /nope: No such file or directory\n")
    v1 = d.shell2("echo out; exit 3")
    assert (v1.returncode, v1.output) == (3, "out\n")
    assert d.shell("getprop ro.product.model") == "Pixel 7 (simulated)"
    assert d.shell2("nosuchcmd", v2=True).returncode == 127


def test_push_pull_stat_list(simphone: SimDevice) -> None:
    d = simphone.device
    payload = bytes(range(256)) * 2000  # spans several WRTE packets
    d.sync.push(payload, "/sdcard/blob.bin", check=True)
    info = d.sync.stat("/sdcard/blob.bin")
    assert info.size == len(payload) and info.mode & 0o100000
    assert d.sync.read_bytes("/sdcard/blob.bin") == payload
    assert "blob.bin" in [f.path for f in d.sync.list("/sdcard")]
    assert d.sync.stat("/sdcard/missing").mtime is None
    assert d.shell(["toybox", "md5sum", "/sdcard/blob.bin"]).split()[0] == hashlib.md5(payload).hexdigest()
    d.shell("rm /sdcard/blob.bin")
    assert not d.sync.exists("/sdcard/blob.bin")


def test_uiautomator_dump_format(simphone: SimDevice) -> None:
    d = simphone.device
    assert d.shell("uiautomator dump") == "UI hierchary dumped to: /sdcard/window_dump.xml"
    xml = d.sync.read_text("/sdcard/window_dump.xml")
    assert "\n" not in xml and '<hierarchy rotation="0">' in xml
    attrs = re.findall(r'(\S+)="', xml.split("<node ", 2)[1])
    assert attrs == [
        "index",
        "text",
        "resource-id",
        "class",
        "package",
        "content-desc",
        "checkable",
        "checked",
        "clickable",
        "enabled",
        "focusable",
        "focused",
        "scrollable",
        "long-clickable",
        "password",
        "selected",
        "bounds",
    ]
    assert re.search(r'bounds="\[0,0\]\[1080,2400\]"', xml)


def test_settings_round_trip_and_system_tools(simphone: SimDevice) -> None:
    d = simphone.device
    assert d.shell("settings get global bluetooth_on") == "0"
    d.shell("settings put global bluetooth_on 1")
    assert d.shell("settings get global bluetooth_on") == "1"
    assert d.shell("settings get global no_such_key") == "null"
    assert d.window_size() == (1080, 2400)
    assert "package:com.android.settings" in d.shell("pm list packages").splitlines()
    assert d.shell("input tap 10 10") == ""
    assert d.app_current().package == "com.android.launcher3"
    res = d.shell2("am start -n com.example/.Nope")
    assert res.returncode == 0 and "Error: Activity class" in res.output
    png = d.shell("screencap -p", encoding=None)
    assert png.startswith(b"\x89PNG")
    assert d.screenshot().size == (1080, 2400)


def test_uiautomator2_click_changes_state(simphone: SimDevice) -> None:
    backend = simphone.backend
    assert isinstance(backend, MiniPhone)
    u = uiautomator2.connect(simphone.device)
    try:
        assert u.info["displayWidth"] == 1080
        assert "com.android.launcher3" in u.dump_hierarchy()
        u.app_start("com.android.settings")
        assert u.app_current()["package"] == "com.android.settings"
        u(resourceId="com.android.settings:id/switch_wifi").click()
        assert simphone.device.shell("settings get global wifi_on") == "0"
        u.press("home")
        assert u.app_current()["package"] == "com.android.launcher3"
        u(text="Messages").click()
        u(resourceId="com.google.android.apps.messaging:id/start_chat_fab").click()
        u(resourceId="com.google.android.apps.messaging:id/recipient_text_view").click()
        u.send_keys("+15550101")
        u(resourceId="com.google.android.apps.messaging:id/compose_message_text").click()
        u.send_keys("hello there")
        u(description="Send SMS").click()
        assert simphone.sim.call(backend.messages) == [{"to": "+15550101", "body": "hello there"}]
    finally:
        u.stop_uiautomator(wait=False)
