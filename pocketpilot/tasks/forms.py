"""Equivalent forms of an answer's value: "07:00-22:00" said as "7 am to 10 pm", 1,200 as 1.2k.

A person asked "when is FreshMart open?" accepts "7am to 10pm" as readily as "07:00-22:00", and
"2.4 km" for a distance of 2.41 where a tenth is all anyone means. Which forms count is declared
data (a :class:`ValueForm` on the answer criterion, taken from the pools' ``value_forms`` when the
task is generated), never guessed: an answer criterion without a form keeps the exact match.

Reading a value out of free text is stricter than a substring, too: with a number form "80" is a
number of its own, so "180%" does not answer "80".
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ValueForm", "says_value"]

_DAY = 24 * 60
_NUMBER = re.compile(r"(?<![\w.,])(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+)(?![\d])")
_MERIDIEM = r"(?:a\.?\s?m\.?|p\.?\s?m\.?)"
_TIME = rf"(?:noon|midday|midnight|\d{{1,2}}(?:[:.h]\d{{2}})?(?:\s*{_MERIDIEM}(?!\w))?)"
_RANGE = re.compile(
    rf"(?<![\w:.])({_TIME})\s*(?:-|–|—|to|until|till|til|through|and)\s*({_TIME})(?![\w:])", re.IGNORECASE)
_ONE_TIME = re.compile(rf"(?<![\w:.])({_TIME})(?![\w:])", re.IGNORECASE)


class ValueForm(BaseModel):
    """The forms in which one kind of value may be said (declared on a world's or template's values).

    Example (the pools' ``value_forms``)::

        hours: {kind: time_range, all_day: ["open 24 hours", "24/7"]}
        distance_km: {kind: quantity, units: [km, kilometres], tolerance: 0.05}
        steps: {kind: number, scales: {k: 1000, thousand: 1000}}
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["number", "quantity", "time", "time_range"]
    """``number``: a number in any separator or declared scale; ``quantity``: a number whose unit,
    where one is said, is one of ``units``; ``time``: a clock time ("07:30", "7:30 am");
    ``time_range``: two clock times ("09:00-17:00", "9 am to 5 pm")."""
    units: list[str] = Field(default_factory=list)
    """A quantity's unit as it may be written (``km``, ``kilometres``); another word after the
    number ("2.41 miles") is another unit, and fails."""
    tolerance: float = Field(default=0.0, ge=0)
    """How far a said number may be from the value and still be it (a rounding a person makes)."""
    scales: dict[str, float] = Field(default_factory=dict)
    """Suffixes that scale a number (``k: 1000`` reads "1.2k" as 1200); none unless declared."""
    all_day: list[str] = Field(default_factory=list)
    """Phrases that say a time range covers the whole day ("open 24 hours")."""


def says_value(form: ValueForm, value: str, text: str) -> bool:
    """Whether ``text`` states ``value`` in one of ``form``'s equivalent forms.

    A value the form cannot read (not a number, not a time) is matched exactly, ignoring case.
    """
    if form.kind in ("number", "quantity"):
        target = _number(value)
        if target is None:
            return value.lower() in text.lower()
        return any(abs(n - target) <= form.tolerance + 1e-9 for n in _numbers(form, text))
    if form.kind == "time":
        minutes = _clock(value)
        if minutes is None:
            return value.lower() in text.lower()
        return any(minutes in _clock_readings(m.group(1)) for m in _ONE_TIME.finditer(text)
                   if not m.group(1).strip().isdigit())  # a bare "7" is a count as often as a time
    span = _span(value)
    if span is None:
        return value.lower() in text.lower()
    lowered = text.lower()
    if _whole_day(span) and any(p.lower() in lowered for p in form.all_day):
        return True
    start, end = span
    return any(start in _clock_readings(m.group(1)) and _same_end(end, _clock_readings(m.group(2)))
               for m in _RANGE.finditer(text))


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _numbers(form: ValueForm, text: str) -> list[float]:
    """Every number ``text`` states, scaled by a declared suffix, of a declared unit where one follows."""
    scales = {k.lower(): v for k, v in form.scales.items()}
    units = {u.lower() for u in form.units}
    found = []
    for m in _NUMBER.finditer(text):
        n = float(m.group(1).replace(",", ""))
        rest = text[m.end():]
        word = re.match(r"\s*([A-Za-z°%/]+\.?)", rest)
        follow = word.group(1).rstrip(".").lower() if word else ""
        if follow in scales:
            n *= scales[follow]
            after = re.match(r"\s*[A-Za-z]+\.?\s*([A-Za-z°%/]+)", rest)
            follow = after.group(1).lower() if after else ""
        if form.kind == "quantity" and units and follow and follow not in units and follow not in _FILLER:
            continue  # "2.41 miles" is another unit than km
        found.append(n)
    return found


_FILLER = {"and", "or", "from", "away", "to", "in", "at", "of", "is", "it", "which", "that", "with", "for", "on",
           "so", "but", "then", "right", "now", "today", "here", "there", "total", "overall", "exactly", "about"}


def _clock(text: str) -> int | None:
    """Minutes after midnight of an "HH:MM" value (``24:00`` is the day's end)."""
    m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", text)
    if not m or int(m.group(1)) > 24 or int(m.group(2)) > 59:
        return None
    return int(m.group(1)) * 60 + int(m.group(2))


def _span(text: str) -> tuple[int, int] | None:
    parts = re.split(r"\s*(?:-|–|—|to)\s*", text.strip())
    if len(parts) != 2:
        return None
    start, end = _clock(parts[0]), _clock(parts[1])
    return None if start is None or end is None else (start, end)


def _whole_day(span: tuple[int, int]) -> bool:
    start, end = span
    return start == 0 and end in (0, _DAY - 1, _DAY)


def _same_end(end: int, readings: set[int]) -> bool:
    """A range's end: "23:59", "24:00" and "midnight" all close the day."""
    if end in readings:
        return True
    return end in (_DAY - 1, _DAY) and bool(readings & {0, _DAY - 1, _DAY})


def _clock_readings(said: str) -> set[int]:
    """The times a person may mean by ``said``: "5" is 5:00 or 17:00, "5 pm" only 17:00."""
    s = said.strip().lower()
    if s in ("noon", "midday"):
        return {12 * 60}
    if s == "midnight":
        return {0, _DAY}
    m = re.fullmatch(rf"(\d{{1,2}})(?:[:.h](\d{{2}}))?\s*({_MERIDIEM})?", s)
    if not m:
        return set()
    hour, minute = int(m.group(1)), int(m.group(2) or 0)
    if hour > 24 or minute > 59:
        return set()
    meridiem = (m.group(3) or "").replace(".", "").replace(" ", "")
    if meridiem:
        if hour == 0 or hour > 12:
            return set()
        hour = hour % 12 + (12 if meridiem == "pm" else 0)
        return {hour * 60 + minute}
    if m.group(2) is None or hour <= 12:
        # no am/pm: "9 to 5" and "7:00" say either half of the day
        return {hour * 60 + minute, ((hour % 12) + 12) * 60 + minute} if hour <= 12 else {hour * 60 + minute}
    return {hour * 60 + minute}
