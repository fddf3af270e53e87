"""The phone's tool catalogue over adb: settings, apps, SMS and generic UI.

The tools run on the device session of :class:`~.executor.AdbExecutor` (its synchronous
primitives: shell, settings, uiautomator2), which mixes this class in; they are defined here as
the sandbox's are defined by its apps, apart from the connection they use. Tool names and result
shapes match the sandbox phone's where the semantics match.
"""

from __future__ import annotations

import base64
import io
import re
from typing import Any, Literal

from pydantic import Field

from ...errors import ToolFailure
from ..tools import tool
from ._errors import DeviceOutputError, adb_errors
from .screen import Element

__all__ = ["LABELS", "RING_MODES", "AdbPhoneTools"]

RING_MODES = {"0": "silent", "1": "vibrate", "2": "normal"}
_RING_CODES = {v: k for k, v in RING_MODES.items()}
_NUMBER = re.compile(r"^\+?[\d\s().-]{3,}$")
LABELS = {
    "com.android.settings": "Settings",
    "com.google.android.apps.messaging": "Messages",
    "com.google.android.keep": "Notes",
    "com.google.android.contacts": "Contacts",
    "com.google.android.deskclock": "Clock",
    "com.google.android.calendar": "Calendar",
    "com.google.android.apps.fitness": "Fit",
    "com.google.android.calculator": "Calculator",
    "com.google.android.GoogleCamera": "Camera",
    "com.android.chrome": "Chrome",
    "com.google.android.apps.maps": "Maps",
    "com.spotify.music": "Spotify",
    "com.google.android.youtube": "YouTube",
    "com.android.launcher3": "Home",
}
"""Labels of well-known packages: adb cannot read app labels without aapt on the device."""


class AdbPhoneTools:
    """The ``@tool`` methods of the adb phone, on the primitives of the device session that mixes them in."""

    # ------------------------------------------------------------------ tools: settings

    def _int_setting(self, namespace: str, key: str, default: int) -> int:
        raw = self._setting(namespace, key)
        if raw is None:
            return default
        try:
            return int(raw)
        except ValueError:
            raise DeviceOutputError(self.serial, f"settings get {namespace} {key}", raw) from None

    @tool(effect="read", idempotent=True)
    def get_settings(self) -> dict[str, Any]:
        """Read the current system settings (wifi, bluetooth, do_not_disturb, brightness, ring_mode)."""
        script = (
            "settings get global wifi_on; settings get global bluetooth_on; settings get global zen_mode; "
            "settings get system screen_brightness; settings get global mode_ringer"
        )
        res = self._sh(script)
        lines = [ln.strip() for ln in res.output.strip().splitlines()]
        try:
            if len(lines) != 5:
                raise ValueError(f"expected 5 lines, got {len(lines)}")
            wifi, bt, zen, bright, ring = (None if v == "null" else v for v in lines)
            return {
                "wifi": int(wifi or 0) != 0,
                "bluetooth": int(bt or 0) != 0,
                "do_not_disturb": int(zen or 0) != 0,
                "brightness": round(int(bright or 0) * 100 / 255),
                "ring_mode": RING_MODES.get(ring or "2", "normal"),
            }
        except ValueError as exc:
            raise DeviceOutputError(self.serial, "settings get (batch)", res.output) from exc

    def _toggle(self, service: str, key: str, enabled: bool) -> None:
        self._sh(["svc", service, "enable" if enabled else "disable"])
        if self._setting("global", key) != ("1" if enabled else "0"):
            self._put("global", key, "1" if enabled else "0")

    @tool(effect="setting", setting="wifi", idempotent=True)
    def set_wifi(self, enabled: bool) -> dict[str, Any]:
        """Turn Wi-Fi on or off.

        Args:
            enabled: True to turn Wi-Fi on.
        """
        self._toggle("wifi", "wifi_on", enabled)
        return {"wifi": enabled}

    @tool(effect="setting", setting="bluetooth", idempotent=True)
    def set_bluetooth(self, enabled: bool) -> dict[str, Any]:
        """Turn Bluetooth on or off.

        Args:
            enabled: True to turn Bluetooth on.
        """
        self._toggle("bluetooth", "bluetooth_on", enabled)
        return {"bluetooth": enabled}

    @tool(effect="setting", setting="do_not_disturb", idempotent=True)
    def set_do_not_disturb(self, enabled: bool) -> dict[str, Any]:
        """Turn do-not-disturb on or off.

        Args:
            enabled: True to silence notifications.
        """
        self._put("global", "zen_mode", "1" if enabled else "0")
        return {"do_not_disturb": enabled}

    @tool(effect="setting", setting="brightness", idempotent=True)
    def set_brightness(
        self, level: int = Field(ge=0, le=100, description="Brightness from 0 to 100.")
    ) -> dict[str, Any]:
        """Set screen brightness in percent.

        Args:
            level: Brightness from 0 to 100.
        """
        self._put("system", "screen_brightness_mode", "0")
        self._put("system", "screen_brightness", str(round(level * 255 / 100)))
        return {"brightness": level}

    @tool(effect="setting", setting="ring_mode", idempotent=True)
    def set_ring_mode(self, mode: Literal["normal", "vibrate", "silent"]) -> dict[str, Any]:
        """Set the ring mode: normal, vibrate or silent.

        Args:
            mode: The new ring mode.
        """
        self._put("global", "mode_ringer", _RING_CODES[mode])
        return {"ring_mode": mode}

    # ------------------------------------------------------------------ tools: apps

    def _packages(self) -> list[str]:
        res = self._sh(["pm", "list", "packages"])
        pkgs = [
            ln.strip()[len("package:") :]
            for ln in res.output.splitlines()
            if ln.strip().startswith("package:")
        ]
        if not pkgs and res.output.strip():
            raise DeviceOutputError(self.serial, "pm list packages", res.output)
        return pkgs

    def _foreground(self) -> tuple[str, str]:
        with self._device_lock, adb_errors(self.serial, known=self._seen_online):
            info = self._device().app_current()
        return info.package, info.activity

    @tool(effect="navigate", idempotent=True)
    def launch_app(
        self,
        app: str = Field(
            min_length=1,
            max_length=100,
            description="App name (e.g. Spotify) or package (e.g. com.spotify.music).",
        ),
    ) -> dict[str, Any]:
        """Open an app by name or package name.

        Args:
            app: App name (e.g. Spotify) or package (e.g. com.spotify.music).
        """
        wanted = app.strip().lower()
        packages = self._packages()
        by_label = {label.lower(): pkg for pkg, label in LABELS.items()}
        package = next((p for p in packages if p.lower() == wanted), None) or (
            by_label.get(wanted) if by_label.get(wanted) in packages else None
        )
        if package is None:
            raise ToolFailure("not_found", f"no installed app named {app!r}")
        res = self._sh(["monkey", "-p", package, "-c", "android.intent.category.LAUNCHER", "1"])
        if "No activities found" in res.output or "monkey aborted" in res.output:
            raise ToolFailure("not_launchable", f"{package} has no launcher activity")
        return {"foreground": package, "label": LABELS.get(package, package.rsplit(".", 1)[-1].capitalize())}

    @tool(effect="read", idempotent=True)
    def get_foreground_app(self) -> dict[str, Any]:
        """Read which app is in front (package and name)."""
        package, _ = self._foreground()
        return {"package": package, "label": LABELS.get(package, package.rsplit(".", 1)[-1].capitalize())}

    @tool(effect="read", idempotent=True)
    def list_apps(self) -> list[dict[str, str]]:
        """List installed apps (name and package)."""
        return [
            {"label": LABELS.get(p, p.rsplit(".", 1)[-1].capitalize()), "package": p}
            for p in self._packages()
        ]

    # ------------------------------------------------------------------ tools: SMS

    def _compose(self, to: str, body: str) -> None:
        if not _NUMBER.match(to.strip()):
            raise ToolFailure("invalid_arguments", "on a device, 'to' must be a phone number")
        res = self._sh(
            [
                "am",
                "start",
                "-a",
                "android.intent.action.SENDTO",
                "-d",
                f"sms:{to.strip()}",
                "--es",
                "sms_body",
                body,
                "--ez",
                "exit_on_sent",
                "true",
            ]
        )
        errors = [ln for ln in res.output.splitlines() if ln.startswith("Error")]
        if errors:  # am start exits 0 even when nothing handles the intent
            raise ToolFailure("no_sms_app", errors[0])

    @tool(effect="navigate", idempotent=True)
    def compose_sms(
        self,
        to: str = Field(min_length=1, max_length=80, description="A phone number."),
        body: str = Field(min_length=1, max_length=480, description="The message text."),
    ) -> dict[str, Any]:
        """Open the SMS app with a message to a number filled in, without sending it.

        Args:
            to: A phone number.
            body: The message text.
        """
        self._compose(to, body)
        return {"to": to.strip(), "status": "composed"}

    @tool(effect="send", destructive=True, idempotent=False, open_world=True)
    def send_sms(
        self,
        to: str = Field(min_length=1, max_length=80, description="A phone number."),
        body: str = Field(min_length=1, max_length=480, description="The message text."),
    ) -> dict[str, Any]:
        """Send an SMS to a phone number (composes it by intent and taps Send).

        Args:
            to: A phone number.
            body: The message text.
        """
        self._compose(to, body)
        screen = self._screen_sync()
        button = next((e for e in screen.elements if e.clickable and self.ui_effects.action_of(e) == "send"), None)
        if button is None:
            raise ToolFailure("send_button_missing", "the compose screen has no Send button")
        self._click_once(*button.center)
        return {"to": to.strip(), "number": to.strip(), "status": "sent"}

    # ------------------------------------------------------------------ tools: generic UI

    @tool(effect="read", idempotent=True)
    def read_screen(self) -> dict[str, Any]:
        """Read the current screen as a numbered list of elements (use the numbers with tap_element)."""
        screen = self._screen_sync()
        return {"package": screen.package, "elements": [e.line() for e in screen.elements]}

    def _target(self, index: int | None, resource_id: str | None, text: str | None) -> Element:
        if index is None and resource_id is None and text is None:
            raise ToolFailure("invalid_arguments", "give index, resource_id or text")
        screen = self._screen if (index is not None and self._screen is not None) else self._screen_sync()
        element = screen.find(index=index, resource_id=resource_id, text=text)
        if element is None:
            raise ToolFailure(
                "element_not_found", "no element matches; call read_screen for the current list"
            )
        return element

    @tool(destructive=True, idempotent=False, open_world=True)
    def tap_element(
        self,
        index: int | None = Field(None, ge=0, description="Element number from read_screen."),
        resource_id: str | None = Field(None, max_length=200, description="Resource id, e.g. switch_wifi."),
        text: str | None = Field(None, max_length=200, description="Visible text or description."),
    ) -> dict[str, Any]:
        """Tap an element of the screen, chosen by number, resource id or text.

        Args:
            index: Element number from read_screen.
            resource_id: Resource id, e.g. switch_wifi.
            text: Visible text or description.
        """
        element = self._target(index, resource_id, text)
        self._click_once(*element.center)
        self._screen = None  # indices are stale once the screen may have changed
        return {"tapped": element.line()}

    @tool(destructive=True, idempotent=False, open_world=True)
    def tap(self, x: int = Field(ge=0, le=10000), y: int = Field(ge=0, le=10000)) -> dict[str, Any]:
        """Tap the screen at pixel coordinates.

        Args:
            x: Horizontal pixel.
            y: Vertical pixel.
        """
        self._click_once(x, y)
        self._screen = None
        return {"tapped": [x, y]}

    @tool(destructive=True, idempotent=False, open_world=True)
    def type_text(
        self,
        text: str = Field(min_length=1, max_length=1000, description="Text to type."),
        index: int | None = Field(None, ge=0, description="Field to type into (element number)."),
        resource_id: str | None = Field(
            None, max_length=200, description="Field to type into (resource id)."
        ),
    ) -> dict[str, Any]:
        """Type text into the focused field, or into a field chosen by number or resource id.

        Args:
            text: Text to type.
            index: Field to type into (element number).
            resource_id: Field to type into (resource id).
        """
        if index is not None or resource_id is not None:
            element = self._target(index, resource_id, None)
            self._click_once(*element.center)
        self._ui(lambda d: d.jsonrpc.setClipboard(None, text))  # idempotent: safe to retry
        self._rpc_once("pasteClipboard", [])  # the part that types: sent once
        self._screen = None
        return {"typed": text}

    @tool(effect="navigate", idempotent=False)
    def scroll(
        self,
        direction: Literal["up", "down"] = "down",
        amount: float = Field(0.5, gt=0.0, le=0.9, description="Share of the screen height."),
    ) -> dict[str, Any]:
        """Scroll the current screen.

        Args:
            direction: down shows what is below, up what is above.
            amount: Share of the screen height.
        """

        def swipe(d: Any) -> None:
            w, h = d.window_size()
            top, bottom = int(h * (0.5 - amount / 2)), int(h * (0.5 + amount / 2))
            y1, y2 = (bottom, top) if direction == "down" else (top, bottom)
            d.swipe(w // 2, y1, w // 2, y2, 0.2)

        self._ui(swipe)
        self._screen = None
        return {"scrolled": direction}

    @tool(effect="navigate", idempotent=False)
    def press_back(self) -> dict[str, Any]:
        """Press the Back key."""
        self._ui(lambda d: d.press("back"))
        self._screen = None
        return {"pressed": "back"}

    @tool(effect="navigate", idempotent=True)
    def press_home(self) -> dict[str, Any]:
        """Go to the home screen."""
        self._ui(lambda d: d.press("home"))
        self._screen = None
        return {"pressed": "home"}

    @tool(effect="read", idempotent=True)
    def take_screenshot(self) -> dict[str, Any]:
        """Take a screenshot (PNG, base64); only when the element list is not enough."""
        with self._device_lock, adb_errors(self.serial, known=self._seen_online):
            image = self._device().screenshot()
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        return {
            "width": image.width,
            "height": image.height,
            "png_base64": base64.b64encode(buf.getvalue()).decode(),
        }
