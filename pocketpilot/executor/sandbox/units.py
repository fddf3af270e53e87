"""The unit converter's fixed table: the pairs a simple phone converter supports.

Deliberately incomplete (no yards, stones, cups, nautical miles...): a planner asked for an
unsupported pair gets ``unsupported_unit`` and must take the calculator route with the standard
factor, which is one of the error-recovery behaviours the task suite checks.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ALIASES", "CONVERSIONS", "convert", "normalize_unit"]

ALIASES: dict[str, str] = {
    "km": "km",
    "kilometer": "km",
    "kilometers": "km",
    "kilometre": "km",
    "kilometres": "km",
    "mi": "mi",
    "mile": "mi",
    "miles": "mi",
    "m": "m",
    "meter": "m",
    "meters": "m",
    "metre": "m",
    "metres": "m",
    "ft": "ft",
    "foot": "ft",
    "feet": "ft",
    "cm": "cm",
    "centimeter": "cm",
    "centimeters": "cm",
    "centimetre": "cm",
    "centimetres": "cm",
    "in": "in",
    "inch": "in",
    "inches": "in",
    "kg": "kg",
    "kilogram": "kg",
    "kilograms": "kg",
    "lb": "lb",
    "lbs": "lb",
    "pound": "lb",
    "pounds": "lb",
    "c": "c",
    "celsius": "c",
    "°c": "c",
    "f": "f",
    "fahrenheit": "f",
    "°f": "f",
    "l": "l",
    "liter": "l",
    "liters": "l",
    "litre": "l",
    "litres": "l",
    "gal": "gal",
    "gallon": "gal",
    "gallons": "gal",
}

CONVERSIONS: dict[tuple[str, str], Callable[[float], float]] = {
    ("km", "mi"): lambda v: v / 1.609344,
    ("mi", "km"): lambda v: v * 1.609344,
    ("m", "ft"): lambda v: v / 0.3048,
    ("ft", "m"): lambda v: v * 0.3048,
    ("cm", "in"): lambda v: v / 2.54,
    ("in", "cm"): lambda v: v * 2.54,
    ("kg", "lb"): lambda v: v / 0.45359237,
    ("lb", "kg"): lambda v: v * 0.45359237,
    ("c", "f"): lambda v: v * 9 / 5 + 32,
    ("f", "c"): lambda v: (v - 32) * 5 / 9,
    ("l", "gal"): lambda v: v / 3.785411784,
    ("gal", "l"): lambda v: v * 3.785411784,
}


def normalize_unit(unit: str) -> str | None:
    """Canonical symbol of ``unit`` or None if the converter does not know it."""
    return ALIASES.get(unit.strip().lower())


def convert(value: float, from_unit: str, to_unit: str) -> tuple[float, str, str] | None:
    """Convert, returning (result, from symbol, to symbol), or None for an unsupported pair."""
    src, dst = normalize_unit(from_unit), normalize_unit(to_unit)
    if src is None or dst is None:
        return None
    if src == dst:
        return value, src, dst
    fn = CONVERSIONS.get((src, dst))
    return None if fn is None else (fn(value), src, dst)
