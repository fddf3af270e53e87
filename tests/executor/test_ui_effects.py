"""Classifying a UI action from the element it hits and the screen it is on (no device needed)."""

from __future__ import annotations

import pytest

from pocketpilot.executor.adb import Element, Screen
from pocketpilot.executor.adb.ui_effects import UiEffectClassifier

C = UiEffectClassifier()


def el(i: int = 0, *, text: str = "", desc: str = "", rid: str = "", cls: str = "Button",
       bounds: tuple[int, int, int, int] = (0, 0, 100, 100), clickable: bool = True) -> Element:
    return Element(index=i, text=text, content_desc=desc, resource_id=rid, class_name=cls, bounds=bounds,
                   clickable=clickable)


@pytest.mark.parametrize(
    ("element", "action"),
    [
        (el(text="Send"), "send"),
        (el(desc="Send SMS", cls="ImageButton"), "send"),
        (el(rid="com.app:id/send_button", cls="ImageButton"), "send"),
        (el(rid="com.app:id/btn_send"), "send"),
        (el(rid="com.app:id/sendButton"), "send"),
        (el(rid="com.app:id/action_delete"), "delete"),
        (el(rid="com.app:id/menu_item_delete"), "delete"),
        (el(text="Delete conversation"), "delete"),
        (el(text="Pay $5.00"), "pay"),
        (el(text="Buy now"), "buy"),
        (el(text="Place order"), "buy"),
        (el(text="INSTALL"), "install"),
        (el(text="OK"), "confirm"),
        (el(text="Confirm transfer"), "confirm"),
        (el(text="Sender"), None),  # a whole-word match, not a prefix
        (el(text="Deleted items"), None),
        (el(text="Start chat", rid="com.app:id/start_chat_fab"), None),
        (el(text="Ok, see you at five then", cls="TextView"), None),  # a message, not a button label
        (el(text="Alice: please send me the file", cls="TextView"), None),
        (el(text="Send money now", rid="com.app:id/compose_text", cls="EditText"), None),  # a field's content
        (el(rid="com.app:id/conversation_snippet", cls="TextView"), None),
        (el(rid="com.android.settings:id/switch_wifi", cls="Switch"), None),
    ],
)
def test_labels_that_name_an_action(element: Element, action: str | None) -> None:
    assert C.action_of(element) == action


def test_a_tap_takes_the_effect_of_the_element_it_hits() -> None:
    send = el(0, desc="Send SMS", rid="com.app:id/send_message_button_icon", bounds=(800, 2000, 1000, 2200))
    field = el(1, text="To", rid="com.app:id/recipient", cls="EditText", bounds=(0, 200, 1000, 400))
    screen = Screen(package="com.app", elements=[send, field])
    on_send = C.classify(screen, "com.app/.Compose", point=send.center)
    assert on_send.effect == "send" and on_send.needs_confirmation and on_send.open_world
    assert "Send SMS" in on_send.detail
    on_field = C.classify(screen, "com.app/.Compose", point=field.center, target=field)
    assert on_field.effect == "navigate" and not on_field.needs_confirmation
    nowhere = C.classify(screen, "com.app/.Compose", point=(500, 1500))  # an unlabeled part of a send screen
    assert nowhere.effect == "send"
    assert C.classify(screen, "com.app/.Compose", point=None, typed="see you\n").effect == "send"
    assert not C.classify(screen, "com.app/.Compose", point=None, typed="see you").needs_confirmation


def test_a_confirmation_takes_the_flow_it_confirms() -> None:
    dialog = Screen(package="com.notes", elements=[
        el(0, text="Delete note?", cls="TextView", clickable=False, bounds=(0, 0, 1000, 100)),
        el(1, text="Cancel", bounds=(0, 200, 400, 300)),
        el(2, text="Delete", bounds=(500, 200, 1000, 300)),
    ])
    assert C.classify(dialog, "com.notes/.Main", point=(700, 250)).effect == "delete"
    assert not C.classify(dialog, "com.notes/.Main", point=(200, 250)).needs_confirmation  # Cancel
    ok_dialog = Screen(package="com.shop", elements=[el(0, text="OK", bounds=(0, 0, 100, 100))])
    alone = C.classify(ok_dialog, "com.shop/.Main", point=(50, 50))
    assert alone.destructive and alone.needs_confirmation and alone.effect == "update"
    shop = UiEffectClassifier(flows={"com.shop/.Checkout": "pay"})
    assert shop.classify(ok_dialog, "com.shop/com.shop.Checkout", point=(50, 50)).effect == "purchase"


def test_the_word_tables_are_data_a_caller_can_replace() -> None:
    german = UiEffectClassifier(words={"send": ("senden",), "delete": ("löschen",)})
    assert german.action_of(el(text="Senden")) == "send"
    assert german.action_of(el(desc="Löschen")) == "delete"
    assert german.action_of(el(text="Send")) is None  # the English table is not in force any more
    assert C.action_of(el(text="Senden")) is None
