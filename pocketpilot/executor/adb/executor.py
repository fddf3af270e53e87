"""AdbExecutor: drive a real (or simulated) Android phone through adbutils and uiautomator2.

Both libraries are synchronous; every device call runs in a worker thread (never orphaned on
cancellation), one device at a time per executor, so several executors - one per phone - run
side by side on one event loop. Tool names and result shapes match the sandbox phone's where
the semantics match (``set_wifi`` -> ``{"wifi": true}``), so the same task and verifier run
against the sandbox, the simulated phone and a real phone.

Failures: a tool that cannot do its job returns ``ok=False`` with a code; a device that is gone
(after reconnect attempts), unauthorized, unknown or too slow raises a
:class:`~pocketpilot.errors.DeviceError` subclass. Every action is journaled under an
idempotency key; one that may have reached the phone before the connection dropped is never
sent again (see :mod:`.journal`).
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import adbutils
from pydantic import BaseModel, ConfigDict, ValidationError

from ...contracts import ToolCall, ToolEffect, ToolResult, ToolSpec
from ...errors import (
    DeviceError,
    DeviceOfflineError,
    DeviceTimeout,
    DeviceUnauthorizedError,
    ToolFailure,
    UnknownDeviceError,
)
from ..sandbox.phone import PHONE_RESULT_FIELDS, SANDBOX_WORLD
from ..tools import Tool, ToolRegistry
from ._errors import DeviceOutputError, adb_errors
from .devices import connect_device, is_network_serial, list_devices
from .journal import ActionJournal
from .screen import Screen, parse_screen
from .server import PinnedAdbClient
from .tools import AdbPhoneTools
from .ui_effects import UiEffectClassifier

__all__ = ["AdbExecutor", "AdbExecutorConfig", "DeviceHealth", "ShellResult"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_FOCUS = re.compile(r"mCurrentFocus=Window\{\S+ \S+ ([^/\s}]+)/([^\s}]+)\}")
_UI_ACTIONS = frozenset({"tap_element", "tap", "type_text"})
"""This executor's tools whose effect is what they hit on screen (they declare none): each
call is classified before it runs (:meth:`AdbExecutor.effect_of`)."""


@dataclass(frozen=True)
class AdbExecutorConfig:
    """Timeouts and reconnect policy."""

    shell_timeout_s: float = 15.0
    """Socket timeout of one adb call; a slower phone raises DeviceTimeout."""
    reconnect_attempts: int = 5
    reconnect_base_delay_s: float = 0.2
    reconnect_max_delay_s: float = 3.0
    connect_timeout_s: float = 5.0
    u2_port: int = 9008
    uncertain_window_s: float = 600.0
    """How long after a non-idempotent action became uncertain (the device dropped mid-send)
    an identical call, under any key, is not sent again."""


class ShellResult(BaseModel):
    """Output and exit code of one shell command."""

    model_config = ConfigDict(frozen=True)

    output: str
    exit_code: int


class DeviceHealth(BaseModel):
    """Result of a health check."""

    model_config = ConfigDict(frozen=True)

    serial: str
    online: bool
    state: str
    latency_ms: float | None = None
    ui_server: bool = False
    detail: str = ""


class AdbExecutor(AdbPhoneTools):
    """The :class:`~pocketpilot.harness.base.Executor` for one Android device over adb.

    Args:
        serial: adb serial, or ``host:port`` of a network device (connected on demand).
        client: an adbutils client; default: the adb server at ``adb_host:adb_port``.
        adb_host: adb server host when no client is given.
        adb_port: adb server port; default ``$ANDROID_ADB_SERVER_PORT`` or 5037, read now
            (adbutils' global client reads it once at import time).
        config: timeouts and reconnect policy.
        journal: an action journal to share or persist; default a private in-memory one.
        ui_effects: how UI actions are classified (label words, flows); default the tables
            of :mod:`.ui_effects`.
    """

    def __init__(
        self,
        serial: str,
        *,
        client: adbutils.AdbClient | None = None,
        adb_host: str = "127.0.0.1",
        adb_port: int | None = None,
        config: AdbExecutorConfig | None = None,
        journal: ActionJournal | None = None,
        ui_effects: UiEffectClassifier | None = None,
    ) -> None:
        self.serial = serial
        if client is None:
            port = (
                adb_port if adb_port is not None else int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))
            )
            client = PinnedAdbClient(host=adb_host, port=port)
        elif not isinstance(client, PinnedAdbClient):
            # a plain client spawns `adb start-server` (on another port) when its server drops
            client = PinnedAdbClient(host=client.host, port=client.port)
        self._client = client
        self._config = config or AdbExecutorConfig()
        self.journal = journal if journal is not None else ActionJournal()
        self._dev: adbutils.AdbDevice | None = None
        self._u2dev: Any = None
        self._screen: Screen | None = None
        self._seen_online = False
        self._needs_reconnect = False
        self._device_lock = threading.RLock()  # one device call at a time, across worker threads
        self._registry = ToolRegistry.from_object(self)
        for name in self._registry.names():  # the phone's tool contract, as the sandbox simulates it
            bound = self._registry[name]
            bound.spec = bound.spec.model_copy(update={"world": SANDBOX_WORLD, **PHONE_RESULT_FIELDS})
        self.ui_effects = ui_effects or UiEffectClassifier()
        self._classified: dict[str, ToolEffect] = {}
        """What effect_of told the harness per call key, checked again when the call runs."""

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> AdbExecutor:
        """Resolve the device (``adb connect`` for host:port) and check it answers.

        Raises:
            UnknownDeviceError, DeviceUnauthorizedError, DeviceOfflineError, DeviceTimeout
        """
        await self._run_sync(self._connect_sync)
        return self

    def _connect_sync(self) -> None:
        with self._device_lock:
            with adb_errors(self.serial, known=self._seen_online):
                if self._needs_reconnect and is_network_serial(self.serial):
                    states = {d.serial: d.state for d in list_devices(self._client)}
                    if states.get(self.serial) not in {None, "device"}:
                        self._client.disconnect(self.serial)
                self._dev = connect_device(
                    self._client, self.serial, timeout_s=self._config.connect_timeout_s
                )
                probe = self._dev.shell2("echo ok", timeout=self._config.shell_timeout_s)
            if probe.output.strip() != "ok":
                raise DeviceOutputError(self.serial, "echo ok", probe.output)
            self._u2dev = None
            self._seen_online = True
            self._needs_reconnect = False

    async def reconnect(self) -> None:
        """Reconnect with exponential backoff.

        Raises:
            DeviceUnauthorizedError: at once (waiting does not help without the user).
            DeviceOfflineError: the device did not come back after the configured attempts.
        """
        cfg = self._config
        delay, last = cfg.reconnect_base_delay_s, None
        self._needs_reconnect = True
        for attempt in range(1, cfg.reconnect_attempts + 1):
            try:
                await self._run_sync(self._connect_sync)
                logger.info("%s: reconnected (attempt %d)", self.serial, attempt)
                return
            except (DeviceUnauthorizedError, UnknownDeviceError) as exc:
                if isinstance(exc, UnknownDeviceError) and is_network_serial(self.serial):
                    last = exc
                else:
                    raise
            except DeviceError as exc:
                last = exc
            logger.info(
                "%s: reconnect attempt %d failed (%s); retrying in %.1fs", self.serial, attempt, last, delay
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, cfg.reconnect_max_delay_s)
        raise DeviceOfflineError(
            self.serial, f"device did not come back after {cfg.reconnect_attempts} reconnect attempts: {last}"
        ) from last

    async def aclose(self) -> None:
        """Stop the uiautomator2 server session this executor started."""
        u2dev, self._u2dev = self._u2dev, None
        if u2dev is not None:
            await self._run_sync(_stop_u2, u2dev)

    async def __aenter__(self) -> AdbExecutor:
        return await self.connect()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run_sync(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run blocking device code in a worker thread; on cancellation wait for it, never orphan it."""
        fut = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            await asyncio.wait({fut})
            raise

    # ------------------------------------------------------------------ device primitives (sync)

    def _device(self) -> adbutils.AdbDevice:
        if self._dev is None:
            self._connect_sync()
        assert self._dev is not None
        return self._dev

    def _sh(self, cmd: str | list[str], *, timeout_s: float | None = None) -> ShellResult:
        with self._device_lock, adb_errors(self.serial, known=self._seen_online):
            ret = self._device().shell2(cmd, timeout=timeout_s or self._config.shell_timeout_s, v2=True)
        return ShellResult(output=ret.output, exit_code=ret.returncode)

    def _u2(self) -> Any:
        with self._device_lock:
            if self._u2dev is None:
                import uiautomator2

                with adb_errors(self.serial, known=self._seen_online):
                    self._u2dev = uiautomator2.connect(self._device(), port=self._config.u2_port)
            return self._u2dev

    def _ui(self, fn: Callable[[Any], T]) -> T:
        with self._device_lock, adb_errors(self.serial, known=self._seen_online):
            return fn(self._u2())

    def _click_once(self, x: float, y: float) -> None:
        """A click sent exactly once.

        uiautomator2's ``jsonrpc_call`` answers an HTTP error by restarting its server and
        *re-sending the call*; for a tap that may already have landed (the reply was lost, not
        the request) that is a double tap. Non-idempotent taps go through the lower-level call
        with no retry, and a failure surfaces as DeviceOfflineError for the journal to handle.
        """
        self._rpc_once("click", [x, y])

    def _rpc_once(self, method: str, params: list[Any]) -> Any:
        """One uiautomator2 JSON-RPC call with no restart-and-resend on failure."""
        from uiautomator2.core import _jsonrpc_call

        return self._ui(
            lambda d: _jsonrpc_call(d.adb_device, self._config.u2_port, method, params, 10.0, False)
        )

    def _dump_sync(self) -> Screen:
        """The screen as it is now, without replacing the element list the planner last read."""
        xml = self._ui(lambda d: d.dump_hierarchy())
        try:
            return parse_screen(xml)
        except (ValueError, SyntaxError) as exc:
            raise DeviceOutputError(self.serial, "dumpWindowHierarchy", xml) from exc

    def _screen_sync(self) -> Screen:
        screen = self._dump_sync()
        self._screen = screen
        return screen

    def _setting(self, namespace: str, key: str) -> str | None:
        out = self._sh(["settings", "get", namespace, key]).output.strip()
        return None if out == "null" else out

    def _put(self, namespace: str, key: str, value: str) -> None:
        res = self._sh(["settings", "put", namespace, key, value])
        if res.exit_code != 0:
            raise ToolFailure(
                "device_refused", f"settings put {namespace} {key} failed: {res.output.strip()}"
            )

    # ------------------------------------------------------------------ public async API

    def tools(self) -> list[ToolSpec]:
        """Every tool this executor offers."""
        return self._registry.tools()

    async def effect_of(self, call: ToolCall) -> ToolEffect | None:
        """What ``call`` would do if it ran now (the :class:`~..effects.ClassifiesEffects` protocol).

        A declared tool's effect is its spec's. A UI action (a tap, typing into a chosen field)
        takes the effect of what it would hit: the element under the tap point on a fresh dump
        of the screen, the element the call chose, and the foreground flow (see
        :mod:`.ui_effects`). When the call then runs and its target has become something that
        needs confirmation the harness was not told about, it fails with ``screen_changed``
        instead of tapping.

        Raises:
            DeviceError: the device is gone (after one reconnect), unauthorized or too slow.
        """
        t = self._registry[call.name] if call.name in self._registry else None
        if t is None:
            return None
        if call.name not in _UI_ACTIONS:
            return ToolEffect.declared(t.spec.for_arguments(call.arguments))
        try:
            parsed = t.args_model.model_validate(call.arguments)
        except ValidationError:
            return ToolEffect(effect="navigate", detail="invalid arguments: the call fails before reaching the device")
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self._needs_reconnect:
            await self.reconnect()
        try:
            try:
                effect = await self._run_sync(self._classify_sync, call.name, kwargs)
            except DeviceOfflineError:
                self._needs_reconnect = True
                await self.reconnect()
                effect = await self._run_sync(self._classify_sync, call.name, kwargs)
        except DeviceOutputError as exc:  # a screen it cannot read: what the tool declares, the worst case
            worst = ToolEffect.declared(t.spec)
            return worst.model_copy(update={"detail": f"the screen could not be read: {exc}"})
        self._classified[call.key()] = effect
        return effect

    def _focus_sync(self) -> str | None:
        """``package/activity`` of the focused window (None when none is focused, e.g. the lock screen)."""
        out = self._sh(["dumpsys", "window"]).output
        match = _FOCUS.search(out)
        return f"{match.group(1)}/{match.group(2)}" if match else None

    def _classify_sync(self, name: str, kwargs: dict[str, Any]) -> ToolEffect:
        """Classify a UI action on the screen as it is now (the planner's element list stays cached)."""
        with self._device_lock:
            fresh = self._dump_sync()
            foreground = self._focus_sync() or fresh.package
            verb = "type" if name == "type_text" else "tap"
            if name == "tap":
                point = (kwargs["x"], kwargs["y"])
                return self.ui_effects.classify(fresh, foreground, point=point, verb=verb)
            index, resource_id = kwargs.get("index"), kwargs.get("resource_id")
            text = kwargs.get("text") if name == "tap_element" else None
            typed = kwargs.get("text") if name == "type_text" else None
            if name == "type_text" and index is None and resource_id is None:
                return self.ui_effects.classify(fresh, foreground, point=None, typed=typed, verb=verb)
            if index is None and resource_id is None and text is None:
                return ToolEffect(effect="navigate", detail="no target given: the call fails without tapping")
            screen = self._screen if (index is not None and self._screen is not None) else fresh
            target = screen.find(index=index, resource_id=resource_id, text=text)
            if target is None:
                return ToolEffect(effect="navigate", detail="no element matches: the call fails, tapping nothing")
            return self.ui_effects.classify(
                fresh, foreground, point=target.center, target=target, typed=typed, verb=verb
            )

    async def shell(self, cmd: str | list[str], *, timeout_s: float | None = None) -> ShellResult:
        """Run a shell command (not journaled: for reads and diagnostics)."""
        return await self._run_sync(self._sh, cmd, timeout_s=timeout_s)

    async def observe(self) -> Screen:
        """The current screen as an indexed element list (what the planner reads)."""
        return await self._run_sync(self._screen_sync)

    async def screenshot(self) -> bytes:
        """A PNG of the screen (``screencap -p``)."""

        def grab() -> bytes:
            with self._device_lock, adb_errors(self.serial, known=self._seen_online):
                image = self._device().screenshot()
            buf = io.BytesIO()
            image.save(buf, format="PNG")
            return buf.getvalue()

        return await self._run_sync(grab)

    async def health(self) -> DeviceHealth:
        """Whether the device is listed, answers a shell round trip, and has its UI server up."""

        def check() -> DeviceHealth:
            try:
                states = {d.serial: d.state for d in list_devices(self._client)}
            except DeviceError as exc:
                return DeviceHealth(serial=self.serial, online=False, state="no-adb-server", detail=str(exc))
            state = states.get(self.serial, "missing")
            if state != "device":
                return DeviceHealth(serial=self.serial, online=False, state=state)
            start = time.perf_counter()
            try:
                self._sh("echo ok", timeout_s=min(5.0, self._config.shell_timeout_s))
            except DeviceError as exc:
                return DeviceHealth(serial=self.serial, online=False, state=state, detail=str(exc))
            latency = (time.perf_counter() - start) * 1000
            return DeviceHealth(
                serial=self.serial,
                online=True,
                state=state,
                latency_ms=round(latency, 2),
                ui_server=self._u2dev is not None,
            )

        return await self._run_sync(check)

    async def call(self, call: ToolCall, *, idempotency_key: str | None = None) -> ToolResult:
        """Run one tool call under an idempotency key (fresh unless the caller retries one).

        A non-idempotent action that may have reached the phone before the connection dropped
        is not resent: the device is reconnected and ``outcome_unknown`` comes back, so the
        planner looks at the screen instead of sending a message twice. Idempotent actions are
        retried once after the reconnect.

        Raises:
            DeviceError: the device is gone for good, unauthorized, unknown or timed out.
        """
        if call.name not in self._registry:
            return ToolResult.failure(
                "unknown_tool", f"no tool named {call.name!r}; available: {', '.join(self._registry.names())}"
            )
        t = self._registry[call.name]
        try:
            parsed = t.args_model.model_validate(call.arguments)
        except ValidationError as exc:
            msg = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(arguments)'}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            return ToolResult.failure("invalid_arguments", f"{call.name}: {msg}")
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        cleared = self._classified.pop(call.key(), None)
        idempotent = t.spec.for_arguments(call.arguments).idempotent  # an argument may select the effect
        key = idempotency_key or uuid.uuid4().hex
        previous = self.journal.get(key)
        if previous is not None:
            if previous.state == "done" and previous.result is not None:
                return previous.result
            if previous.state in {"uncertain", "pending"} and not previous.idempotent:
                return _outcome_unknown(call.name)
        if not idempotent:
            since = time.time() - self._config.uncertain_window_s
            twin = self.journal.uncertain_twin(self.serial, call.name, call.arguments, since=since)
            if twin is not None:
                return _outcome_unknown(call.name, again=True)
        if self._needs_reconnect:
            await self.reconnect()
        self.journal.begin(key, self.serial, call.name, call.arguments, idempotent)
        for attempt in (1, 2):
            try:
                result = await self._run_sync(self._invoke, t, kwargs, cleared)
            except DeviceOfflineError:
                self.journal.mark_uncertain(key)
                self._needs_reconnect = True
                logger.warning("%s: device dropped during %s (attempt %d)", self.serial, call.name, attempt)
                await self.reconnect()  # raises when the device is gone for good
                if not idempotent:
                    return _outcome_unknown(call.name)
                if attempt == 2:
                    raise
                self.journal.begin(key, self.serial, call.name, call.arguments, idempotent)
                continue
            except DeviceTimeout:
                self.journal.mark_uncertain(key)
                raise
            except (DeviceUnauthorizedError, UnknownDeviceError):
                self.journal.mark_failed(key)
                raise
            self.journal.finish(key, result)
            return result
        raise AssertionError("unreachable")

    def _invoke(self, t: Tool, kwargs: dict[str, Any], cleared: ToolEffect | None = None) -> ToolResult:
        try:
            with self._device_lock:  # the check and the action see the same screen
                if cleared is not None and t.name in _UI_ACTIONS:
                    now = self._classify_sync(t.name, kwargs)
                    confirmed = cleared.needs_confirmation and cleared.effect == now.effect
                    if now.needs_confirmation and not confirmed:
                        return ToolResult.failure(
                            "screen_changed",
                            f"{t.name} was not run: the screen changed since it was checked, and it would "
                            f"now be a {now.effect_label()} ({now.detail}). Read the screen and call again.",
                        )
                value = t(**kwargs)
        except ToolFailure as failure:
            return ToolResult.failure(failure.code, failure.message, failure.data)
        except DeviceOutputError as exc:
            return ToolResult.failure("malformed_output", str(exc))
        except (ValueError, TypeError, LookupError) as exc:
            if isinstance(exc, DeviceError):
                raise
            return ToolResult.failure("invalid_arguments", f"{t.name}: {exc}")
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        return value if isinstance(value, ToolResult) else ToolResult.success(value)


def _outcome_unknown(name: str, *, again: bool = False) -> ToolResult:
    if again:
        return ToolResult.failure(
            "outcome_unknown",
            f"an identical {name} may already have taken effect when the device dropped; it was not sent "
            "again because it is not safe to repeat. Read the screen to see whether it took effect; if it "
            "did not, tell the user.",
        )
    return ToolResult.failure(
        "outcome_unknown",
        f"the device dropped while {name} was being sent; it was not sent again because it is not safe "
        "to repeat. Read the screen to see whether it took effect.",
    )


def _stop_u2(u2dev: Any) -> None:
    try:
        u2dev.stop_uiautomator(wait=False)
    except Exception as exc:  # noqa: BLE001 - best effort at shutdown, logged
        logger.debug("stopping uiautomator2 failed: %s", exc)
