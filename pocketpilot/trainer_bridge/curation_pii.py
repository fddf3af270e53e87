"""Narrow PII detectors for curation: only what is unambiguous enough to send a record to review.

The memory redactor over-redacts on purpose (names after "text", dates as phone numbers),
which would route nearly every sandbox episode to a human. Here only high-precision kinds
count: email addresses, international phone numbers, Luhn-valid card numbers (standing alone,
not inside an id or a decimal), US SSNs and IBANs.
"""

from __future__ import annotations

import re

__all__ = ["find_pii"]

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}")
_PHONE = re.compile(r"(?<![\w+])\+\d[\d\s().-]{7,18}\d(?!\w)")
# A card number stands alone: not a digit run inside a hex id (a memory or episode id, 32 hex
# digits, now and then holds a Luhn-valid run of 13-19 digits), nor a decimal's fraction
# (a float printed with 16-17 digits), nor a group of a dashed id.
_CARD = re.compile(r"(?<![\w.])(?<!\w-)(?:\d[ -]?){12,18}\d(?![-.]?\w)")
_SSN = re.compile(r"(?<!\d)\d{3}-\d{2}-\d{4}(?!\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){3,7}(?:\s?[A-Z0-9]{1,3})?\b")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def find_pii(text: str) -> list[str]:
    """Kinds of PII found in ``text`` (sorted, unique): email, phone, card, ssn, iban."""
    kinds: set[str] = set()
    if _EMAIL.search(text):
        kinds.add("email")
    if _PHONE.search(text):
        kinds.add("phone")
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group(0))
        if 13 <= len(digits) <= 19 and _luhn(digits):
            kinds.add("card")
            break
    if _SSN.search(text):
        kinds.add("ssn")
    if _IBAN.search(text):
        kinds.add("iban")
    return sorted(kinds)
