"""The planner's view of a screen: a compact indexed element list derived from the UI tree.

Raw uiautomator XML is thousands of tokens of layout containers; the planner needs the few
views it can read or act on. Each kept view gets a stable index within one observation, and
``tap_element(index=...)`` refers to it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Element", "Screen", "parse_screen"]

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")


class Element(BaseModel):
    """One readable or actionable view."""

    model_config = ConfigDict(frozen=True)

    index: int
    text: str = ""
    resource_id: str = ""
    class_name: str = ""
    content_desc: str = ""
    clickable: bool = False
    checkable: bool = False
    checked: bool = False
    focused: bool = False
    scrollable: bool = False
    enabled: bool = True
    bounds: tuple[int, int, int, int] = (0, 0, 0, 0)

    @property
    def center(self) -> tuple[int, int]:
        """Where a tap on this element lands."""
        left, top, right, bottom = self.bounds
        return (left + right) // 2, (top + bottom) // 2

    def line(self) -> str:
        """One compact line: ``[3] Switch "ON" #switch_wifi checked``."""
        parts = [f"[{self.index}]", self.class_name]
        if self.text:
            parts.append(f'"{self.text}"')
        if self.content_desc and self.content_desc != self.text:
            parts.append(f"desc={self.content_desc!r}")
        if self.resource_id:
            parts.append("#" + self.resource_id.split(":id/")[-1])
        flags = [
            name
            for name, on in (
                ("clickable", self.clickable and not self.checkable),
                ("checked", self.checkable and self.checked),
                ("unchecked", self.checkable and not self.checked),
                ("focused", self.focused),
                ("scrollable", self.scrollable),
                ("disabled", not self.enabled),
            )
            if on
        ]
        return " ".join(parts + flags)


class Screen(BaseModel):
    """An observation of the current screen."""

    model_config = ConfigDict(frozen=True)

    package: str = ""
    elements: list[Element] = Field(default_factory=list)

    def text(self) -> str:
        """The element list as the planner reads it."""
        return "\n".join([f"app: {self.package}", *(e.line() for e in self.elements)])

    def find(
        self, *, index: int | None = None, resource_id: str | None = None, text: str | None = None
    ) -> Element | None:
        """First element matching all given criteria (resource ids match with or without package)."""
        for element in self.elements:
            if index is not None and element.index != index:
                continue
            if resource_id is not None and resource_id not in {
                element.resource_id,
                element.resource_id.split(":id/")[-1],
            }:
                continue
            if text is not None and text.lower() not in {element.text.lower(), element.content_desc.lower()}:
                continue
            return element
        return None


def _flag(node: ET.Element, name: str) -> bool:
    return node.get(name) == "true"


def parse_screen(xml: str, *, skip_packages: frozenset[str] = frozenset({"com.android.systemui"})) -> Screen:
    """Parse ``uiautomator dump`` XML into a Screen of readable/actionable elements.

    Raises:
        ValueError: the text is not a UI hierarchy.
    """
    root = ET.fromstring(xml.encode("utf-8") if isinstance(xml, str) else xml)
    if root.tag != "hierarchy":
        raise ValueError(f"not a UI hierarchy: root is <{root.tag}>")
    elements: list[Element] = []
    package = ""
    for node in root.iter("node"):
        pkg = node.get("package", "")
        if pkg in skip_packages:
            continue
        package = package or pkg
        text, desc = node.get("text", ""), node.get("content-desc", "")
        actionable = any(_flag(node, k) for k in ("clickable", "checkable", "scrollable", "long-clickable"))
        if not (actionable or text or desc):
            continue
        match = _BOUNDS.fullmatch(node.get("bounds", ""))
        bounds = tuple(int(v) for v in match.groups()) if match else (0, 0, 0, 0)
        if bounds[2] <= bounds[0] or bounds[3] <= bounds[1]:
            continue  # off-screen or zero-size views cannot be tapped
        elements.append(
            Element(
                index=len(elements),
                text=text,
                resource_id=node.get("resource-id", ""),
                class_name=node.get("class", "").rsplit(".", 1)[-1],
                content_desc=desc,
                clickable=_flag(node, "clickable"),
                checkable=_flag(node, "checkable"),
                checked=_flag(node, "checked"),
                focused=_flag(node, "focused"),
                scrollable=_flag(node, "scrollable"),
                enabled=_flag(node, "enabled"),
                bounds=bounds,  # type: ignore[arg-type]
            )
        )
    return Screen(package=package, elements=elements)
