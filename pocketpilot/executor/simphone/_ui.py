"""UI trees of the simulated phone: nodes, the real ``uiautomator dump`` XML, and a PNG render.

The XML reproduces what a real device writes (one line, ``<hierarchy rotation="0">``, attributes
in the real order) so that parsers tested here also read real phones.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

__all__ = ["UiNode", "dump_xml", "find_nodes", "hit_test", "render_png"]

XML_DECL = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"


@dataclass
class UiNode:
    """One view of the current screen, with the attributes uiautomator reports."""

    class_name: str = "android.widget.FrameLayout"
    text: str = ""
    resource_id: str = ""
    package: str = ""
    content_desc: str = ""
    bounds: tuple[int, int, int, int] = (0, 0, 0, 0)
    checkable: bool = False
    checked: bool = False
    clickable: bool = False
    enabled: bool = True
    focusable: bool = False
    focused: bool = False
    scrollable: bool = False
    long_clickable: bool = False
    password: bool = False
    selected: bool = False
    children: list[UiNode] = field(default_factory=list)
    action: str = ""
    """What a tap on this node does, interpreted by the backend that built the tree."""

    def walk(self) -> Iterator[UiNode]:
        """This node and every descendant, depth first in document order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def contains(self, x: float, y: float) -> bool:
        """Whether the point lies inside this node's bounds."""
        left, top, right, bottom = self.bounds
        return left <= x < right and top <= y < bottom

    @property
    def center(self) -> tuple[int, int]:
        """Center of the bounds, where a click on the element lands."""
        left, top, right, bottom = self.bounds
        return (left + right) // 2, (top + bottom) // 2


def _b(value: bool) -> str:
    return "true" if value else "false"


def _node_xml(node: UiNode, index: int, out: list[str]) -> None:
    left, top, right, bottom = node.bounds
    attrs = (
        f'index="{index}" text={quoteattr(node.text)} resource-id={quoteattr(node.resource_id)} '
        f"class={quoteattr(node.class_name)} package={quoteattr(node.package)} "
        f'content-desc={quoteattr(node.content_desc)} checkable="{_b(node.checkable)}" '
        f'checked="{_b(node.checked)}" clickable="{_b(node.clickable)}" '
        f'enabled="{_b(node.enabled)}" focusable="{_b(node.focusable)}" '
        f'focused="{_b(node.focused)}" scrollable="{_b(node.scrollable)}" '
        f'long-clickable="{_b(node.long_clickable)}" password="{_b(node.password)}" '
        f'selected="{_b(node.selected)}" bounds="[{left},{top}][{right},{bottom}]"'
    )
    if not node.children:
        out.append(f"<node {attrs} />")
        return
    out.append(f"<node {attrs}>")
    for i, child in enumerate(node.children):
        _node_xml(child, i, out)
    out.append("</node>")


def dump_xml(root: UiNode, rotation: int = 0) -> str:
    """The one-line XML a real ``uiautomator dump`` writes for this tree."""
    out = [XML_DECL, f'<hierarchy rotation="{rotation}">']
    _node_xml(root, 0, out)
    out.append("</hierarchy>")
    return "".join(out)


def hit_test(root: UiNode, x: float, y: float) -> UiNode | None:
    """The deepest enabled clickable node under the point (as Android dispatches a tap)."""
    found: UiNode | None = None
    for node in root.walk():
        if node.contains(x, y) and node.enabled and (node.clickable or node.checkable):
            found = node
    return found


_SELECTOR_ATTRS = {
    "text": "text",
    "resourceId": "resource_id",
    "className": "class_name",
    "description": "content_desc",
    "packageName": "package",
    "checked": "checked",
    "clickable": "clickable",
    "enabled": "enabled",
    "focused": "focused",
    "selected": "selected",
}


def find_nodes(root: UiNode, selector: dict[str, object]) -> list[UiNode]:
    """Nodes matching a uiautomator2 selector (exact fields plus the common *Contains forms)."""
    mask_free = {
        k: v for k, v in selector.items() if k not in {"mask", "childOrSibling", "childOrSiblingSelector"}
    }
    instance = int(mask_free.pop("instance", 0) or 0)
    mask_free.pop("index", None)
    out: list[UiNode] = []
    for node in root.walk():
        ok = True
        for key, want in mask_free.items():
            if key in _SELECTOR_ATTRS:
                ok = getattr(node, _SELECTOR_ATTRS[key]) == want
            elif key == "textContains":
                ok = str(want) in node.text
            elif key == "descriptionContains":
                ok = str(want) in node.content_desc
            elif key == "textStartsWith":
                ok = node.text.startswith(str(want))
            else:
                ok = False
            if not ok:
                break
        if ok:
            out.append(node)
    return out[instance:]


def render_png(root: UiNode, size: tuple[int, int], *, scale: float = 1.0) -> bytes:
    """A PNG of the screen: boxes for views, their text, and switch states (Pillow)."""
    from PIL import Image, ImageDraw

    width, height = int(size[0] * scale), int(size[1] * scale)
    image = Image.new("RGB", (width, height), (250, 250, 250))
    draw = ImageDraw.Draw(image)
    for node in root.walk():
        left, top, right, bottom = (int(v * scale) for v in node.bounds)
        if right <= left or bottom <= top or node is root:
            continue
        fill = None
        if node.checkable:
            fill = (120, 200, 120) if node.checked else (210, 210, 210)
        elif node.clickable:
            fill = (225, 235, 250)
        draw.rectangle((left, top, right - 1, bottom - 1), outline=(90, 90, 90), fill=fill)
        label = node.text or node.content_desc
        if label:
            draw.text((left + 6, top + 6), label[:60], fill=(20, 20, 20))
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()
