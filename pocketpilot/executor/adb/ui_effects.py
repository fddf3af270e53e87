"""What a UI action on a device triggers, read from the element it hits and the screen it is on.

A tap has no effect of its own: ``tap_element(text="Send SMS")`` on the Messages compose
screen sends as surely as ``send_sms`` does, and a harness that confirmed only ``send_sms``
would let the message out through the UI. So before a UI action runs, the adb executor
classifies it from the UI hierarchy: the labels (text, content description, resource id) of
the elements under the tap point, and the flow the foreground screen is in.

The words are data about the device's UI, the user's world: which labels name a send, a
delete, a payment, a purchase, a confirmation or an install. They live in the tables below,
and :class:`UiEffectClassifier` takes others (another language, an app with its own wording).
A tool's semantics are never guessed from its name; this module classifies what is on screen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ...contracts import Effect, ToolEffect
from .screen import Element, Screen

__all__ = [
    "ACTION_EFFECTS",
    "ACTION_WORDS",
    "FLOWS",
    "ID_AFFIXES",
    "UiAction",
    "UiEffectClassifier",
]

UiAction = Literal["send", "delete", "pay", "buy", "confirm", "install"]

ACTION_WORDS: Mapping[UiAction, tuple[str, ...]] = {
    "send": ("send", "submit", "post"),
    "delete": ("delete", "remove", "erase", "discard", "trash", "uninstall", "wipe", "factory reset"),
    "pay": ("pay", "checkout", "check out"),
    "buy": ("buy", "purchase", "place order", "order now", "subscribe"),
    "confirm": ("confirm", "ok", "okay", "yes", "allow", "accept", "agree", "proceed"),
    "install": ("install", "reinstall"),
}
"""Openings of a label that name an action (matched as whole words at the label's start)."""

ACTION_EFFECTS: Mapping[UiAction, Effect] = {
    "send": "send",
    "delete": "delete",
    "pay": "purchase",
    "buy": "purchase",
    "install": "create",
    "confirm": "update",
}
"""The effect each UI action has (a confirmation inside a flow takes the flow's instead)."""

FLOWS: Mapping[str, UiAction] = {
    "com.google.android.apps.messaging/.ui.conversation.ConversationActivity": "send",
}
"""Foreground screens (``package/activity`` or a whole ``package``) that are a flow of one
action: an unlabeled tap or a confirmation there is that action. A screen not listed is a flow
when one of its own buttons names the action (a dialog with a Delete button)."""

ID_AFFIXES: frozenset[str] = frozenset(
    {"btn", "button", "bt", "ic", "icon", "iv", "img", "image", "imagebutton", "fab", "action", "menu",
     "item"}
)
"""Widget words that open resource ids (``btn_send``, ``action_delete``) and say nothing of the action."""

_PRIORITY: tuple[UiAction, ...] = ("pay", "buy", "delete", "send", "install", "confirm")
"""When several elements under one tap name actions, the one that costs the user most wins."""
_OPEN_WORLD = frozenset({"send", "pay", "buy", "install"})
_FIELDS = ("EditText", "AutoCompleteTextView", "MultiAutoCompleteTextView")
"""A tap on a text field focuses it; its text is the user's content, not a button label."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _words(label: str) -> list[str]:
    return re.findall(r"[^\W_]+", _CAMEL.sub(" ", label).casefold())


@dataclass(frozen=True)
class UiEffectClassifier:
    """Classify a UI action from the elements it hits, the screen and the foreground app.

    Args:
        words: label openings per UI action (default :data:`ACTION_WORDS`).
        flows: foreground screens that are the flow of one action (default :data:`FLOWS`).
        max_label_words: a text or description longer than this is content (a chat snippet
            that happens to start with "Ok"), not a button label.
    """

    words: Mapping[UiAction, Sequence[str]] = field(default_factory=lambda: dict(ACTION_WORDS))
    flows: Mapping[str, UiAction] = field(default_factory=lambda: dict(FLOWS))
    max_label_words: int = 4

    def _names(self, tokens: list[str]) -> UiAction | None:
        for action in _PRIORITY:
            for phrase in self.words.get(action, ()):
                want = _words(phrase)
                if want and tokens[: len(want)] == want:
                    return action
        return None

    def action_of(self, element: Element) -> UiAction | None:
        """The action an element's labels name (None: a neutral element)."""
        if element.class_name.endswith(_FIELDS):
            return None
        found: list[UiAction] = []
        for label in (element.text, element.content_desc):
            tokens = _words(label)
            if tokens and len(tokens) <= self.max_label_words:
                named = self._names(tokens)
                if named:
                    found.append(named)
        if element.resource_id:
            tokens = _words(element.resource_id.split(":id/")[-1])
            while tokens and tokens[0] in ID_AFFIXES:
                tokens = tokens[1:]
            named = self._names(tokens)
            if named:
                found.append(named)
        return min(found, key=_PRIORITY.index) if found else None

    def flow_of(self, screen: Screen, foreground: str) -> UiAction | None:
        """The action the foreground screen is a flow of: listed, or named by one of its buttons."""
        package, _, activity = foreground.partition("/")
        short = f"{package}/{activity[len(package):]}" if activity.startswith(package + ".") else foreground
        listed = self.flows.get(foreground) or self.flows.get(short) or self.flows.get(package)
        if listed is not None:
            return listed
        named = [a for e in screen.elements if e.clickable and (a := self.action_of(e)) and a != "confirm"]
        return min(named, key=_PRIORITY.index) if named else None

    def classify(
        self,
        screen: Screen,
        foreground: str,
        *,
        point: tuple[float, float] | None,
        target: Element | None = None,
        typed: str | None = None,
        verb: str = "tap",
    ) -> ToolEffect:
        """The effect of a UI action on ``screen``.

        Args:
            screen: the screen as it is now (fresh, not the planner's last reading).
            foreground: ``package/activity`` in front.
            point: where the tap lands (None: no tap, e.g. typing into the focused field).
            target: the element the call chose, when it chose one (its labels count even if
                the fresh screen has moved).
            typed: text the action types (a newline in a send flow submits on many keyboards).
            verb: how the detail names the action ("tap", "type").
        """
        hit = [e for e in screen.elements if point is not None and _inside(e, point)]
        if target is not None:
            hit.append(target)
        named = [(a, e) for e in hit if (a := self.action_of(e)) is not None]
        flow = self.flow_of(screen, foreground)
        action: UiAction | None = None
        where = f" in {foreground.partition('/')[0]}" if foreground else ""
        if named:
            action, element = min(named, key=lambda ae: _PRIORITY.index(ae[0]))
            if action == "confirm" and flow is not None:
                action = flow  # "OK" in a delete dialog deletes
            detail = f"{verb} on {_describe(element)}{where}"
        elif point is not None and flow is not None and not any(_labeled(e) for e in hit):
            action = flow
            detail = f"{verb} at {point[0]:.0f},{point[1]:.0f} on an unlabeled part of a {flow} screen{where}"
        elif typed is not None and "\n" in typed and flow is not None:
            action = flow
            detail = f"{verb} of a line break in a {flow} screen{where}"
        else:
            aimed = "the focused field" if point is None else f"{point[0]:.0f},{point[1]:.0f}"
            aimed = _describe(hit[-1]) if hit else aimed
            return ToolEffect(effect="navigate", detail=f"{verb} on {aimed}{where}: names no send, delete, "
                              "payment, purchase, confirmation or install")
        return ToolEffect(effect=ACTION_EFFECTS[action], destructive=True, open_world=action in _OPEN_WORLD,
                          detail=f"{action}: {detail}")


def _inside(element: Element, point: tuple[float, float]) -> bool:
    left, top, right, bottom = element.bounds
    return left <= point[0] < right and top <= point[1] < bottom


def _labeled(element: Element) -> bool:
    return bool(element.text or element.content_desc or element.resource_id)


def _describe(element: Element) -> str:
    parts = [element.class_name or "element"]
    if element.text:
        parts.append(repr(element.text))
    if element.content_desc and element.content_desc != element.text:
        parts.append(f"desc={element.content_desc!r}")
    if element.resource_id:
        parts.append("#" + element.resource_id.split(":id/")[-1])
    return " ".join(parts)
