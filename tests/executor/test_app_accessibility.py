"""The accessibility app: each setting tool changes its own key and nothing else."""

from __future__ import annotations

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

SUCCESSES = [
    Ok("get_accessibility_settings", {}, lambda d, s: d["font_scale"] == 1.0 and d["talkback"] is False),
    Ok("set_font_size", {"scale": 1.3}, lambda d, s: s.accessibility.font_scale == 1.3),
    Ok("set_display_size", {"size": "largest"}, lambda d, s: s.accessibility.display_size == "largest"),
    Ok("set_bold_text", {"enabled": True}, lambda d, s: s.accessibility.bold_text),
    Ok("set_high_contrast_text", {"enabled": True}, lambda d, s: s.accessibility.high_contrast_text),
    Ok("set_color_inversion", {"enabled": True}, lambda d, s: s.accessibility.color_inversion),
    Ok("set_color_correction", {"mode": "tritanomaly"}, lambda d, s: s.accessibility.color_correction == "tritanomaly"),
    Ok("set_talkback", {"enabled": True}, lambda d, s: s.accessibility.talkback),
    Ok("set_magnification", {"enabled": True}, lambda d, s: s.accessibility.magnification),
    Ok("set_remove_animations", {"enabled": True}, lambda d, s: s.accessibility.remove_animations),
    Ok("set_live_caption", {"enabled": True}, lambda d, s: s.accessibility.live_caption),
    Ok("set_mono_audio", {"enabled": True}, lambda d, s: s.accessibility.mono_audio),
    Ok("set_touch_hold_delay", {"delay": "long"}, lambda d, s: s.accessibility.touch_hold_delay == "long"),
]

FAILURES = [
    Fails("set_font_size", {"scale": 3}, "invalid_arguments"),
    Fails("set_font_size", {"scale": 0.5}, "invalid_arguments"),
    Fails("set_display_size", {"size": "huge"}, "invalid_arguments"),
    Fails("set_color_correction", {"mode": "sepia"}, "invalid_arguments"),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_accessibility_tool_has_a_success() -> None:
    assert_covers("accessibility", SUCCESSES)


@pytest.mark.parametrize("case", SUCCESSES[1:], ids=str)
async def test_a_setting_tool_changes_exactly_its_declared_key(case: Ok) -> None:
    phone, ex = fresh()
    spec = phone.registry()[case.tool].spec
    before = phone.snapshot()
    assert (await call(ex, case.tool, **case.args)).ok
    assert [c.path for c in phone.changes_since(before)] == [f"accessibility.{spec.setting}"]
