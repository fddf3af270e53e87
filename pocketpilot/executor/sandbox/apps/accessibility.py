"""Accessibility: the settings that adapt the phone to how someone sees, hears and touches."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ...tools import tool
from ..sections.accessibility import ColorCorrection, DisplaySize, TouchDelay
from ._base import App

__all__ = ["AccessibilityApp"]


class AccessibilityApp(App):
    """Text size, display size, contrast and colour, TalkBack, magnification, captions, audio."""

    name = "accessibility"
    domain = "accessibility"
    section = "accessibility"
    package = "com.android.settings"
    label = "Settings"

    def _set(self, key: str, value: Any) -> dict[str, Any]:
        setattr(self.state.accessibility, key, value)
        return {key: value}

    @tool(effect="read", idempotent=True)
    async def get_accessibility_settings(self) -> dict[str, Any]:
        """Read every accessibility setting (font scale, display size, contrast, colour, TalkBack...)."""
        return self.state.accessibility.model_dump()

    @tool(effect="setting", setting="font_scale", idempotent=True)
    async def set_font_size(
        self, scale: float = Field(ge=0.85, le=2.0, description="Text size factor; 1.0 is the default.")
    ) -> dict[str, Any]:
        """Make system text larger or smaller (font size scale, 1.0 default, up to 2.0).

        Args:
            scale: Text size factor; 1.0 is the default.
        """
        return self._set("font_scale", round(scale, 2))

    @tool(effect="setting", setting="display_size", idempotent=True)
    async def set_display_size(self, size: DisplaySize) -> dict[str, Any]:
        """Make everything on screen (icons, buttons, text) larger or smaller: display size.

        Args:
            size: small, default, large, larger or largest.
        """
        return self._set("display_size", size)

    @tool(effect="setting", setting="bold_text", idempotent=True)
    async def set_bold_text(self, enabled: bool) -> dict[str, Any]:
        """Turn bold text on or off for all system text.

        Args:
            enabled: True for bold text.
        """
        return self._set("bold_text", enabled)

    @tool(effect="setting", setting="high_contrast_text", idempotent=True)
    async def set_high_contrast_text(self, enabled: bool) -> dict[str, Any]:
        """Turn high-contrast text on or off (text outlined in black or white).

        Args:
            enabled: True for high-contrast text.
        """
        return self._set("high_contrast_text", enabled)

    @tool(effect="setting", setting="color_inversion", idempotent=True)
    async def set_color_inversion(self, enabled: bool) -> dict[str, Any]:
        """Turn colour inversion on or off (light screens turn dark, dark turn light).

        Args:
            enabled: True inverts colours.
        """
        return self._set("color_inversion", enabled)

    @tool(effect="setting", setting="color_correction", idempotent=True)
    async def set_color_correction(self, mode: ColorCorrection) -> dict[str, Any]:
        """Set colour correction for colour blindness, or grayscale, or off.

        Args:
            mode: off, deuteranomaly (red-green), protanomaly (red-green), tritanomaly (blue-yellow) or grayscale.
        """
        return self._set("color_correction", mode)

    @tool(effect="setting", setting="talkback", idempotent=True)
    async def set_talkback(self, enabled: bool) -> dict[str, Any]:
        """Turn the TalkBack screen reader on or off (it speaks what is on screen).

        Args:
            enabled: True turns TalkBack on.
        """
        return self._set("talkback", enabled)

    @tool(effect="setting", setting="magnification", idempotent=True)
    async def set_magnification(self, enabled: bool) -> dict[str, Any]:
        """Turn the screen magnification shortcut on or off (zoom in on part of the screen).

        Args:
            enabled: True enables magnification.
        """
        return self._set("magnification", enabled)

    @tool(effect="setting", setting="remove_animations", idempotent=True)
    async def set_remove_animations(self, enabled: bool) -> dict[str, Any]:
        """Turn screen animations off (reduce motion) or back on.

        Args:
            enabled: True removes animations.
        """
        return self._set("remove_animations", enabled)

    @tool(effect="setting", setting="live_caption", idempotent=True)
    async def set_live_caption(self, enabled: bool) -> dict[str, Any]:
        """Turn Live Caption on or off (automatic captions for speech in media and calls).

        Args:
            enabled: True shows captions.
        """
        return self._set("live_caption", enabled)

    @tool(effect="setting", setting="mono_audio", idempotent=True)
    async def set_mono_audio(self, enabled: bool) -> dict[str, Any]:
        """Turn mono audio on or off (both ears get the same sound).

        Args:
            enabled: True combines the channels.
        """
        return self._set("mono_audio", enabled)

    @tool(effect="setting", setting="touch_hold_delay", idempotent=True)
    async def set_touch_hold_delay(self, delay: TouchDelay) -> dict[str, Any]:
        """Set how long a touch must be held to count as a long press (touch and hold delay).

        Args:
            delay: short, medium or long.
        """
        return self._set("touch_hold_delay", delay)
