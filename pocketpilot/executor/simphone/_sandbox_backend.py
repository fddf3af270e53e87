"""Serve the sandbox phone's state over adb: the simulated phone's default backend.

Android settings keys map onto the sandbox settings (``global wifi_on`` <-> ``settings.wifi``,
``system screen_brightness`` 0-255 <-> ``settings.brightness`` percent, ``global mode_ringer``
0/1/2 <-> ring mode, ``global zen_mode`` <-> do-not-disturb), installed apps become packages,
the foreground app is shared both ways, and an SMS sent from the Messages compose screen lands
in ``messages.sent`` exactly as the sandbox's ``send_sms`` tool would record it. The screens
themselves come from :class:`~._mini.MiniPhone` and are rebuilt from that state on every dump.
"""

from __future__ import annotations

from ..sandbox import SandboxPhone
from ..sandbox.state import Message, PhoneState
from ._mini import LAUNCHER, App, MiniPhone

__all__ = ["SandboxBackend"]

_RING = {"silent": "0", "vibrate": "1", "normal": "2"}
_RING_BACK = {v: k for k, v in _RING.items()}
_BOOL_KEYS = {
    ("global", "wifi_on"): "wifi",
    ("global", "bluetooth_on"): "bluetooth",
    ("global", "zen_mode"): "do_not_disturb",
}


class SandboxBackend(MiniPhone):
    """A :class:`~.backend.PhoneBackend` whose state is a :class:`SandboxPhone`."""

    def __init__(self, phone: SandboxPhone | None = None) -> None:
        self.sandbox = phone if phone is not None else SandboxPhone()
        device = self.sandbox.state.device
        super().__init__(serial=device.serial, model=device.model)

    @property
    def state(self) -> PhoneState:
        """The sandbox's live state (it may be swapped by restore/reset)."""
        return self.sandbox.state

    def apps(self) -> tuple[App, ...]:
        """The launcher, the sandbox's installed apps, then the sandbox apps with a package of their own.

        The apps added with issue 16 §2 (Gmail, Wallet, Files...) are not in ``installed_apps``,
        whose default the existing tasks pin; the simulated phone still lists and launches them.
        """
        main = {
            "com.android.settings": ".Settings",
            "com.google.android.apps.messaging": ".ui.ConversationListActivity",
        }
        installed = [App(a.package, a.label, main.get(a.package, ".MainActivity")) for a in self.state.installed_apps]
        known = {a.package for a in installed}
        extra = {}
        for app in self.sandbox.apps.values():
            package, label = type(app).package, type(app).label
            if package is not None and package not in known:
                extra.setdefault(package, App(package, label or app.name, ".MainActivity"))
        return (App(LAUNCHER, "Launcher", ".Launcher"), *installed, *extra.values())

    def props(self) -> dict[str, str]:
        """Properties derived from the sandbox device."""
        props = super().props()
        device = self.state.device
        props.update(
            {
                "ro.serialno": device.serial,
                "ro.product.model": device.model,
                "ro.build.version.release": device.android_version,
            }
        )
        return props

    # settings ---------------------------------------------------------------------------
    def get_setting(self, namespace: str, key: str) -> str | None:
        """Mapped keys read the sandbox; the rest are stored locally."""
        settings = self.state.settings
        if (namespace, key) in _BOOL_KEYS:
            return "1" if getattr(settings, _BOOL_KEYS[(namespace, key)]) else "0"
        if (namespace, key) == ("system", "screen_brightness"):
            return str(round(settings.brightness * 255 / 100))
        if (namespace, key) == ("global", "mode_ringer"):
            return _RING[settings.ring_mode]
        return super().get_setting(namespace, key)

    def put_setting(self, namespace: str, key: str, value: str) -> None:
        """Mapped keys write the sandbox (values out of range are clamped, as Android does)."""
        settings = self.state.settings
        if (namespace, key) in _BOOL_KEYS:
            setattr(settings, _BOOL_KEYS[(namespace, key)], value.strip() not in {"0", ""})
            if key == "bluetooth_on" and value.strip() == "0":
                self.state.earbuds.connected = False
        elif (namespace, key) == ("system", "screen_brightness"):
            settings.brightness = max(0, min(100, round(int(value) * 100 / 255)))
        elif (namespace, key) == ("global", "mode_ringer"):
            settings.ring_mode = _RING_BACK.get(value.strip(), "normal")  # type: ignore[assignment]
        else:
            super().put_setting(namespace, key, value)

    def list_settings(self, namespace: str) -> dict[str, str]:
        """Local keys plus the mapped ones of this namespace."""
        out = super().list_settings(namespace)
        for ns, key in [*_BOOL_KEYS, ("system", "screen_brightness"), ("global", "mode_ringer")]:
            if ns == namespace:
                out[key] = self.get_setting(ns, key) or ""
        return out

    # foreground app ---------------------------------------------------------------------
    def foreground(self) -> tuple[str, str]:
        """The sandbox's foreground app wins if a sandbox tool changed it behind our back."""
        package = self.state.foreground_app
        if self.stack[-1][0] != package:
            app = self._app(package)
            self.stack = (
                [(LAUNCHER, ".Launcher")]
                if package == LAUNCHER
                else [(LAUNCHER, ".Launcher"), (package, app.main_activity if app else ".MainActivity")]
            )
        return self.stack[-1]

    def ui_tree(self):  # noqa: ANN201 - same as the base
        """Sync the back stack with the sandbox first."""
        self.foreground()
        return super().ui_tree()

    def _go(self, package: str, activity: str) -> None:
        self.foreground()
        super()._go(package, activity)
        self.state.foreground_app = package

    def force_stop(self, package: str) -> None:
        """Stopping the foreground app returns to the home screen."""
        self.foreground()
        super().force_stop(package)
        self.state.foreground_app = self.stack[-1][0]

    def key(self, name: str) -> None:
        """Keys move the back stack; the sandbox follows."""
        self.foreground()
        super().key(name)
        self.state.foreground_app = self.stack[-1][0]

    def tap(self, x: float, y: float) -> None:
        """Taps may change the screen; keep the sandbox in step."""
        self.foreground()
        super().tap(x, y)
        self.state.foreground_app = self.stack[-1][0]

    # messages ---------------------------------------------------------------------------
    def send_sms(self, to: str, body: str) -> None:
        """Record the SMS in the sandbox, the way its send_sms tool does."""
        state = self.state
        digits = "".join(ch for ch in to if ch.isdigit())
        known = [c for c in state.contacts.items if "".join(ch for ch in c.phone if ch.isdigit()) == digits]
        msgs = state.messages
        message = Message(
            id=f"sms-{msgs.next_id}",
            number=to,
            contact=known[0].name if known else None,
            body=body,
            at=state.now,
        )
        msgs.sent = [*msgs.sent, message]
        msgs.next_id += 1
        self.events.append(f"sms {to}")

    def messages(self) -> list[dict[str, str]]:
        """Sent messages from the sandbox."""
        return [{"to": m.contact or m.number, "body": m.body} for m in self.state.messages.sent]
