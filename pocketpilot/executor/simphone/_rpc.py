"""The uiautomator2 server's HTTP JSON-RPC (``GET /ping``, ``POST /jsonrpc/0``) on ``tcp:9008``.

The method names and result shapes are those the uiautomator2 3.7 client calls; selector
methods take the client's ``Selector`` dict (mask plus fields).
"""

from __future__ import annotations

import base64
import io
import json
import logging
from collections.abc import Callable
from typing import Any

from ._stream import DeviceStream, StreamClosed
from ._ui import UiNode, dump_xml, find_nodes
from .backend import PhoneBackend, normalize_key

__all__ = ["serve_http"]

logger = logging.getLogger(__name__)

ACTION_UP = 1
_NOT_FOUND = -32002


class RpcError(Exception):
    """A JSON-RPC error object."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _rect(bounds: tuple[int, int, int, int]) -> dict[str, int]:
    left, top, right, bottom = bounds
    return {"bottom": bottom, "left": left, "right": right, "top": top}


def _info(node: UiNode) -> dict[str, Any]:
    return {
        "bounds": _rect(node.bounds),
        "visibleBounds": _rect(node.bounds),
        "childCount": len(node.children),
        "className": node.class_name,
        "contentDescription": node.content_desc or None,
        "packageName": node.package,
        "resourceName": node.resource_id or None,
        "text": node.text,
        "checkable": node.checkable,
        "checked": node.checked,
        "clickable": node.clickable,
        "enabled": node.enabled,
        "focusable": node.focusable,
        "focused": node.focused,
        "longClickable": node.long_clickable,
        "scrollable": node.scrollable,
        "selected": node.selected,
    }


class RpcHandler:
    """Dispatches JSON-RPC calls to the phone backend; one per simulated phone."""

    def __init__(self, phone: PhoneBackend) -> None:
        self.phone = phone
        self.clipboard = ""
        self._methods: dict[str, Callable[..., Any]] = {
            name[4:]: getattr(self, name) for name in dir(self) if name.startswith("rpc_")
        }

    def dispatch(self, method: str, params: Any) -> Any:
        """Run one method; RpcError for unknown methods and missing objects."""
        fn = self._methods.get(method)
        if fn is None:
            raise RpcError(-32601, f"Method not found: {method}")
        if isinstance(params, dict):
            return fn(**params)
        return fn(*(params or []))

    def _one(self, selector: dict[str, Any]) -> UiNode:
        nodes = find_nodes(self.phone.ui_tree(), selector)
        if not nodes:
            raise RpcError(
                _NOT_FOUND,
                "com.github.uiautomator.stub.UiObjectNotFoundException: "
                + json.dumps({k: v for k, v in selector.items() if k != "mask"}),
            )
        return nodes[0]

    # screen ---------------------------------------------------------------------------
    def rpc_dumpWindowHierarchy(self, compressed: bool = False, max_depth: int = 50, *_: Any) -> str:
        return dump_xml(self.phone.ui_tree())

    def rpc_deviceInfo(self) -> dict[str, Any]:
        w, h = self.phone.screen_size
        props = self.phone.props()
        return {
            "currentPackageName": self.phone.foreground()[0],
            "displayHeight": h,
            "displayWidth": w,
            "displayRotation": 0,
            "displaySizeDpX": round(w / 2.625),
            "displaySizeDpY": round(h / 2.625),
            "naturalOrientation": True,
            "productName": props.get("ro.product.name", "simphone"),
            "screenOn": True,
            "sdkInt": int(props.get("ro.build.version.sdk", "34")),
        }

    def rpc_takeScreenshot(self, scale: float = 1.0, quality: int = 80) -> str:
        from PIL import Image

        from ._ui import render_png

        png = render_png(self.phone.ui_tree(), self.phone.screen_size, scale=float(scale))
        buf = io.BytesIO()
        Image.open(io.BytesIO(png)).convert("RGB").save(buf, format="JPEG", quality=int(quality))
        return base64.b64encode(buf.getvalue()).decode()

    # input ----------------------------------------------------------------------------
    def rpc_click(self, x: float, y: float, duration_ms: int = 0) -> bool:
        self.phone.tap(float(x), float(y))
        return True

    def rpc_injectInputEvent(self, action: int, x: float, y: float, meta: int = 0) -> bool:
        if action == ACTION_UP:
            self.phone.tap(float(x), float(y))
        return True

    def rpc_swipe(self, fx: float, fy: float, tx: float, ty: float, steps: int = 10) -> bool:
        self.phone.swipe(float(fx), float(fy), float(tx), float(ty))
        return True

    def rpc_swipePoints(self, points: list[int], steps: int = 10) -> bool:
        if len(points) >= 4:
            self.phone.swipe(points[0], points[1], points[-2], points[-1])
        return True

    def rpc_drag(self, sx: float, sy: float, ex: float, ey: float, steps: int = 10) -> bool:
        return self.rpc_swipe(sx, sy, ex, ey, steps)

    def rpc_pressKey(self, key: str) -> bool:
        self.phone.key(normalize_key(key))
        return True

    def rpc_pressKeyCode(self, code: int, meta: int = 0) -> bool:
        self.phone.key(normalize_key(int(code)))
        return True

    def rpc_setClipboard(self, label: str | None, text: str) -> None:
        self.clipboard = text

    def rpc_getClipboard(self) -> str:
        return self.clipboard

    def rpc_pasteClipboard(self) -> None:
        self.phone.type_text(self.clipboard)

    def rpc_clearInputText(self) -> None:
        for node in self.phone.ui_tree().walk():
            if node.focused and node.class_name.endswith("EditText"):
                self.phone.set_field_text(node, "")

    # selectors --------------------------------------------------------------------------
    def rpc_exist(self, selector: dict[str, Any]) -> bool:
        return bool(find_nodes(self.phone.ui_tree(), selector))

    def rpc_waitForExists(self, selector: dict[str, Any], timeout_ms: int = 0) -> bool:
        return self.rpc_exist(selector)

    def rpc_waitUntilGone(self, selector: dict[str, Any], timeout_ms: int = 0) -> bool:
        return not self.rpc_exist(selector)

    def rpc_count(self, selector: dict[str, Any]) -> int:
        return len(find_nodes(self.phone.ui_tree(), selector))

    def rpc_objInfo(self, selector: dict[str, Any]) -> dict[str, Any]:
        return _info(self._one(selector))

    def rpc_objInfoOfAllInstances(self, selector: dict[str, Any]) -> list[dict[str, Any]]:
        return [_info(n) for n in find_nodes(self.phone.ui_tree(), selector)]

    def rpc_getText(self, selector: dict[str, Any]) -> str:
        return self._one(selector).text

    def rpc_setText(self, selector: dict[str, Any], text: str) -> bool:
        self.phone.set_field_text(self._one(selector), text)
        return True

    def rpc_clearTextField(self, selector: dict[str, Any]) -> bool:
        return self.rpc_setText(selector, "")

    # no-ops a real server also accepts -------------------------------------------------
    def rpc_wakeUp(self) -> bool:
        return True

    def rpc_sleep(self) -> bool:
        return True

    def rpc_setOrientation(self, value: str) -> bool:
        return True

    def rpc_freezeRotation(self, freeze: bool = True) -> bool:
        return True

    def rpc_makeToast(self, text: str, duration: float = 1000) -> bool:
        return True

    def rpc_getLastToast(self) -> None:
        return None

    def rpc_clearLastToast(self) -> None:
        return None

    def rpc_openNotification(self) -> bool:
        return True

    def rpc_openQuickSettings(self) -> bool:
        return True


def _response(status: str, body: bytes, content_type: str) -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


async def serve_http(stream: DeviceStream, handler: RpcHandler) -> None:
    """Serve one HTTP request from the stream, then close (the client opens one stream per call)."""
    try:
        head = await stream.read_until(b"\r\n\r\n")
    except StreamClosed:
        return
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = (lines[0].split(" ") + ["", ""])[:3]
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
    length = int(headers.get("content-length", "0") or 0)
    body = await stream.read_exactly(length) if length else b""
    if method == "GET" and path == "/ping":
        await stream.write(_response("200 OK", b"pong", "text/plain"))
        return
    if method != "POST" or not path.startswith("/jsonrpc/0"):
        await stream.write(_response("404 Not Found", b"not found", "text/plain"))
        return
    try:
        request = json.loads(body)
    except ValueError:
        request = {}
        reply: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error"},
        }
    else:
        reply = {"jsonrpc": "2.0", "id": request.get("id")}
        try:
            reply["result"] = handler.dispatch(request.get("method", ""), request.get("params"))
        except RpcError as exc:
            reply["error"] = {"code": exc.code, "message": exc.message}
        except (TypeError, ValueError, KeyError) as exc:
            logger.debug("rpc %s failed: %s", request.get("method"), exc)
            reply["error"] = {"code": -32602, "message": f"Invalid params: {exc}"}
    logger.debug("rpc %s", request.get("method") if isinstance(request, dict) else "?")
    await stream.write(_response("200 OK", json.dumps(reply).encode(), "application/json"))
