"""Accessibility settings: text and display, colour, screen reader, audio and interaction."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ._base import Section

__all__ = ["AccessibilityState", "ColorCorrection", "DisplaySize", "TouchDelay"]

DisplaySize = Literal["small", "default", "large", "larger", "largest"]
ColorCorrection = Literal["off", "deuteranomaly", "protanomaly", "tritanomaly", "grayscale"]
TouchDelay = Literal["short", "medium", "long"]


class AccessibilityState(Section):
    """Android's accessibility panel (defaults are the phone's out-of-box values)."""

    font_scale: Annotated[float, Field(ge=0.85, le=2.0)] = 1.0
    display_size: DisplaySize = "default"
    bold_text: bool = False
    high_contrast_text: bool = False
    color_inversion: bool = False
    color_correction: ColorCorrection = "off"
    talkback: bool = False
    magnification: bool = False
    remove_animations: bool = False
    live_caption: bool = False
    mono_audio: bool = False
    touch_hold_delay: TouchDelay = "short"
