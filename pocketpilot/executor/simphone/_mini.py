"""A small self-contained phone state: launcher, Settings and Messaging.

It exists so the wire layers can be tested without the sandbox phone, and it is the base the
sandbox adapter builds on: the screen layouts, focus, typing and the back stack live here,
while subclasses decide where settings and messages are stored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ._ui import UiNode, hit_test
from .backend import Intent, MemFS

__all__ = ["App", "MiniPhone"]

logger = logging.getLogger(__name__)

W, H = 1080, 2400
STATUS_BAR = 80
LAUNCHER = "com.android.launcher3"
SETTINGS = "com.android.settings"
MESSAGING = "com.google.android.apps.messaging"
RING_MODES = {"0": "silent", "1": "vibrate", "2": "normal"}


@dataclass(frozen=True)
class App:
    """An installed app: package, label and the activity its launcher icon starts."""

    package: str
    label: str
    main_activity: str


_APPS = (
    App(LAUNCHER, "Launcher", ".Launcher"),
    App(SETTINGS, "Settings", ".Settings"),
    App(MESSAGING, "Messages", ".ui.ConversationListActivity"),
)
COMPOSE = ".ui.conversation.ConversationActivity"
_SYSTEM_PACKAGES = (
    "android",
    "com.android.systemui",
    "com.android.shell",
    "com.android.phone",
    "com.android.inputmethod.latin",
)


class MiniPhone:
    """In-memory phone state implementing :class:`~.backend.PhoneBackend`."""

    screen_size = (W, H)

    def __init__(self, serial: str = "SIMPHONE0001", model: str = "Pixel 7 (simulated)") -> None:
        self.fs = MemFS()
        self.fs.write("/sdcard/Download/readme.txt", b"hello from the simulated phone\n")
        self._serial, self._model = serial, model
        self._settings: dict[tuple[str, str], str] = {
            ("global", "wifi_on"): "1",
            ("global", "bluetooth_on"): "0",
            ("global", "zen_mode"): "0",
            ("global", "mode_ringer"): "2",
            ("global", "airplane_mode_on"): "0",
            ("system", "screen_brightness"): "128",
            ("system", "screen_brightness_mode"): "0",
            ("secure", "default_input_method"): "com.android.inputmethod.latin/.LatinIME",
        }
        self.stack: list[tuple[str, str]] = [(LAUNCHER, ".Launcher")]
        self.fields: dict[str, str] = {}
        self.focused: str | None = None
        self.sent_messages: list[dict[str, str]] = []
        self.clipboard = ""
        self.scroll = 0
        self.events: list[str] = []
        """Every input the phone received, in order (tests check nothing was sent twice)."""

    # ------------------------------------------------------------------ apps and settings

    def apps(self) -> tuple[App, ...]:
        """Apps with a launcher entry."""
        return _APPS

    def props(self) -> dict[str, str]:
        """System properties."""
        return {
            "ro.serialno": self._serial,
            "ro.product.model": self._model,
            "ro.product.manufacturer": "pocketpilot",
            "ro.product.brand": "pocketpilot",
            "ro.product.name": "simphone",
            "ro.product.device": "simphone",
            "ro.build.version.sdk": "34",
            "ro.build.version.release": "14",
            "ro.product.cpu.abi": "x86_64",
            "sys.boot_completed": "1",
        }

    def get_setting(self, namespace: str, key: str) -> str | None:
        """The stored value."""
        return self._settings.get((namespace, key))

    def put_setting(self, namespace: str, key: str, value: str) -> None:
        """Store a value."""
        self._settings[(namespace, key)] = value

    def delete_setting(self, namespace: str, key: str) -> None:
        """Forget a value (``settings delete``)."""
        self._settings.pop((namespace, key), None)

    def list_settings(self, namespace: str) -> dict[str, str]:
        """Every key of a namespace (``settings list``)."""
        return {k: v for (ns, k), v in self._settings.items() if ns == namespace}

    def send_sms(self, to: str, body: str) -> None:
        """Record a sent message (the sandbox adapter stores it in the sandbox instead)."""
        self.sent_messages.append({"to": to, "body": body})

    def messages(self) -> list[dict[str, str]]:
        """Sent messages, oldest first."""
        return list(self.sent_messages)

    def packages(self) -> list[str]:
        """Installed packages."""
        return [*_SYSTEM_PACKAGES, *(a.package for a in self.apps())]

    def foreground(self) -> tuple[str, str]:
        """Top of the back stack."""
        return self.stack[-1]

    def _app(self, package: str) -> App | None:
        return next((a for a in self.apps() if a.package == package), None)

    def _go(self, package: str, activity: str) -> None:
        if self.stack[-1] != (package, activity):
            self.stack.append((package, activity))
        self.focused = None
        self.scroll = 0

    def start_activity(self, intent: Intent) -> str | None:
        """Resolve an intent to one of the apps, as the activity manager would."""
        self.events.append(f"intent {intent.action or ''} {intent.component or intent.package or ''}")
        if intent.data and intent.data.split(":", 1)[0] in {"sms", "smsto"}:
            self._go(MESSAGING, COMPOSE)
            self.fields["recipient"] = intent.data.split(":", 1)[1]
            self.fields["body"] = intent.extras.get("sms_body", "")
            return None
        if intent.action and intent.action.startswith("android.settings."):
            self._go(SETTINGS, ".Settings")
            return None
        if intent.component:
            package, _, activity = intent.component.partition("/")
            app = self._app(package)
            if app is None:
                return f"Error: Activity class {{{intent.component}}} does not exist."
            if activity.startswith(package):
                activity = activity[len(package) :]
            if activity == COMPOSE and package == MESSAGING:
                self._go(MESSAGING, COMPOSE)
            elif activity in {app.main_activity, ""} or activity.endswith(app.main_activity):
                self._go(package, app.main_activity)
            else:
                return f"Error: Activity class {{{intent.component}}} does not exist."
            return None
        if intent.package:
            app = self._app(intent.package)
            if app is None:
                return f"Error: no activity found for package {intent.package}"
            self._go(app.package, app.main_activity)
            return None
        return "Error: Activity not started, unable to resolve Intent"

    def force_stop(self, package: str) -> None:
        """Drop the app's screens from the back stack."""
        self.events.append(f"force-stop {package}")
        self.stack = [s for s in self.stack if s[0] != package] or [(LAUNCHER, ".Launcher")]

    # ------------------------------------------------------------------ input

    def tap(self, x: float, y: float) -> None:
        """Dispatch a tap to the deepest clickable view under it."""
        node = hit_test(self.ui_tree(), x, y)
        self.events.append(f"tap {int(x)},{int(y)} -> {node.action if node else '-'}")
        if node is not None and node.action:
            self._act(node.action, x)

    def type_text(self, text: str) -> None:
        """Append to the focused field."""
        self.events.append(f"text {text!r}")
        if self.focused is not None:
            self.fields[self.focused] = self.fields.get(self.focused, "") + text

    def set_field_text(self, node: UiNode, text: str) -> None:
        """Replace the field's text and focus it."""
        if node.action.startswith("focus:"):
            self.focused = node.action.split(":", 1)[1]
            self.fields[self.focused] = text

    def key(self, name: str) -> None:
        """HOME, BACK, DEL, ENTER; other keys are recorded and ignored."""
        self.events.append(f"key {name}")
        if name == "HOME":
            self.stack = [(LAUNCHER, ".Launcher")]
            self.focused = None
        elif name == "BACK":
            if len(self.stack) > 1:
                self.stack.pop()
            self.focused = None
        elif name == "DEL" and self.focused:
            self.fields[self.focused] = self.fields.get(self.focused, "")[:-1]

    def swipe(self, x1: float, y1: float, x2: float, y2: float) -> None:
        """A vertical swipe scrolls the current list."""
        self.events.append(f"swipe {int(x1)},{int(y1)} {int(x2)},{int(y2)}")
        self.scroll = max(0, self.scroll + int(y1 - y2))

    def _act(self, action: str, x: float) -> None:
        verb, _, arg = action.partition(":")
        if verb == "launch":
            app = self._app(arg)
            if app:
                self._go(app.package, app.main_activity)
        elif verb == "toggle":
            ns, key = arg.split("/")
            self.put_setting(ns, key, "0" if self.get_setting(ns, key) not in {"0", None} else "1")
        elif verb == "ring":
            nxt = {"2": "1", "1": "0", "0": "2"}
            self.put_setting(
                "global", "mode_ringer", nxt.get(self.get_setting("global", "mode_ringer") or "2", "2")
            )
        elif verb == "brightness":
            self.put_setting(
                "system", "screen_brightness", str(max(0, min(255, round((x - 40) / (W - 80) * 255))))
            )
        elif verb == "focus":
            self.focused = arg
        elif verb == "compose":
            self.fields.update(recipient="", body="")
            self._go(MESSAGING, COMPOSE)
        elif verb == "send":
            to, body = self.fields.get("recipient", "").strip(), self.fields.get("body", "")
            if to and body:
                self.send_sms(to, body)
                self.fields["body"] = ""
                self.stack.pop()
                self.focused = None

    # ------------------------------------------------------------------ screens

    def ui_tree(self) -> UiNode:
        """The current screen as a view tree."""
        package, activity = self.stack[-1]
        content = UiNode(
            class_name="android.widget.FrameLayout",
            package=package,
            resource_id="android:id/content",
            bounds=(0, STATUS_BAR, W, H),
        )
        if package == SETTINGS:
            content.children = self._settings_screen()
        elif package == MESSAGING and activity == COMPOSE:
            content.children = self._compose_screen()
        elif package == MESSAGING:
            content.children = self._messages_screen()
        elif package == LAUNCHER:
            content.children = self._launcher_screen()
        else:
            app = self._app(package)
            content.children = [self._title(package, app.label if app else package)]
        status = UiNode(
            class_name="android.widget.FrameLayout",
            package="com.android.systemui",
            resource_id="com.android.systemui:id/status_bar",
            bounds=(0, 0, W, STATUS_BAR),
        )
        return UiNode(
            class_name="android.widget.FrameLayout",
            package=package,
            bounds=(0, 0, W, H),
            children=[status, content],
        )

    def _title(self, package: str, text: str) -> UiNode:
        return UiNode(
            class_name="android.widget.TextView",
            text=text,
            package=package,
            resource_id="android:id/title",
            bounds=(40, STATUS_BAR + 20, W - 40, STATUS_BAR + 140),
        )

    def _launcher_screen(self) -> list[UiNode]:
        out = []
        for i, app in enumerate(a for a in self.apps() if a.package != LAUNCHER):
            col, row = i % 4, i // 4
            left, top = 40 + col * 250, 300 + row * 300
            out.append(
                UiNode(
                    class_name="android.widget.TextView",
                    text=app.label,
                    content_desc=app.label,
                    resource_id=f"{LAUNCHER}:id/icon",
                    package=LAUNCHER,
                    clickable=True,
                    focusable=True,
                    long_clickable=True,
                    bounds=(left, top, left + 220, top + 260),
                    action=f"launch:{app.package}",
                )
            )
        return out

    def _setting_rows(self) -> list[tuple[str, str, str, bool | None, str]]:
        """(row id, label, summary, switch state or None, action)."""
        ring = RING_MODES.get(self.get_setting("global", "mode_ringer") or "2", "normal")
        return [
            ("wifi", "Wi-Fi", "", self.get_setting("global", "wifi_on") == "1", "toggle:global/wifi_on"),
            (
                "bluetooth",
                "Bluetooth",
                "",
                self.get_setting("global", "bluetooth_on") == "1",
                "toggle:global/bluetooth_on",
            ),
            (
                "dnd",
                "Do not disturb",
                "",
                (self.get_setting("global", "zen_mode") or "0") != "0",
                "toggle:global/zen_mode",
            ),
            (
                "airplane",
                "Airplane mode",
                "",
                self.get_setting("global", "airplane_mode_on") == "1",
                "toggle:global/airplane_mode_on",
            ),
            ("ring_mode", "Ring mode", ring, None, "ring:"),
            (
                "brightness",
                "Brightness",
                self.get_setting("system", "screen_brightness") or "128",
                None,
                "brightness:",
            ),
        ]

    def _settings_screen(self) -> list[UiNode]:
        out = [self._title(SETTINGS, "Settings")]
        for i, (rid, label, summary, state, action) in enumerate(self._setting_rows()):
            top = 260 + i * 180
            row = UiNode(
                class_name="android.widget.LinearLayout",
                package=SETTINGS,
                clickable=True,
                focusable=True,
                resource_id=f"{SETTINGS}:id/row_{rid}",
                bounds=(0, top, W, top + 170),
                action=action,
            )
            row.children.append(
                UiNode(
                    class_name="android.widget.TextView",
                    text=label,
                    package=SETTINGS,
                    resource_id="android:id/title",
                    bounds=(40, top + 20, 700, top + 90),
                )
            )
            if summary:
                row.children.append(
                    UiNode(
                        class_name="android.widget.TextView",
                        text=summary,
                        package=SETTINGS,
                        resource_id="android:id/summary",
                        bounds=(40, top + 95, 700, top + 150),
                    )
                )
            if state is not None:
                row.children.append(
                    UiNode(
                        class_name="android.widget.Switch",
                        text="ON" if state else "OFF",
                        package=SETTINGS,
                        resource_id=f"{SETTINGS}:id/switch_{rid}",
                        checkable=True,
                        checked=state,
                        clickable=True,
                        focusable=True,
                        content_desc=label,
                        bounds=(860, top + 40, 1040, top + 130),
                        action=action,
                    )
                )
            out.append(row)
        return out

    def _messages_screen(self) -> list[UiNode]:
        out = [self._title(MESSAGING, "Messages")]
        for i, msg in enumerate(self.messages()[-8:]):
            top = 260 + i * 160 - self.scroll
            if top < 200:
                continue
            out.append(
                UiNode(
                    class_name="android.widget.TextView",
                    text=f"{msg['to']}: {msg['body']}",
                    package=MESSAGING,
                    resource_id=f"{MESSAGING}:id/conversation_snippet",
                    clickable=True,
                    bounds=(40, top, W - 40, top + 140),
                )
            )
        out.append(
            UiNode(
                class_name="android.widget.Button",
                text="Start chat",
                package=MESSAGING,
                resource_id=f"{MESSAGING}:id/start_chat_fab",
                clickable=True,
                focusable=True,
                bounds=(680, H - 260, W - 40, H - 100),
                action="compose:",
            )
        )
        return out

    def _field(self, name: str, rid: str, hint: str, top: int) -> UiNode:
        return UiNode(
            class_name="android.widget.EditText",
            text=self.fields.get(name, "") or hint,
            package=MESSAGING,
            resource_id=f"{MESSAGING}:id/{rid}",
            clickable=True,
            focusable=True,
            focused=self.focused == name,
            long_clickable=True,
            bounds=(40, top, W - 40, top + 140),
            action=f"focus:{name}",
        )

    def _compose_screen(self) -> list[UiNode]:
        return [
            self._title(MESSAGING, "New conversation"),
            self._field("recipient", "recipient_text_view", "To", 260),
            self._field("body", "compose_message_text", "Text message", H - 300),
            UiNode(
                class_name="android.widget.ImageButton",
                content_desc="Send SMS",
                package=MESSAGING,
                resource_id=f"{MESSAGING}:id/send_message_button_icon",
                clickable=True,
                focusable=True,
                bounds=(W - 200, H - 300, W - 40, H - 160),
                action="send:",
            ),
        ]
