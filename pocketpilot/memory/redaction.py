"""Redact user-specific details before text enters the shared agent-experience store.

Regular expressions plus simple heuristics, tuned to over-redact: emails, phone numbers,
street addresses, card/account/id numbers, URLs with credentials, and person names (names
the caller tells us about, and capitalised words after cues such as ``my sister`` or
``named``). A redacted detail becomes a typed placeholder (``[EMAIL]``, ``[PHONE]`` …) so the
shared record keeps its shape ("texted [NAME] at [PHONE]") without the person.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["RedactionResult", "Redactor"]

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.UNICODE)
_URL_CRED = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/@:]+:[^\s/@]+@\S+", re.IGNORECASE)
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}(?:\s?[A-Z0-9]{1,3})?\b")
_CARD = re.compile(r"\b(?:\d[ -]?){13,19}\b")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){1,4}(?!\w)"
)
_ID_LABELLED = re.compile(
    r"\b(?:id|passport|licen[cs]e|account|acct|member|customer|order|policy|ssn|imei|serial)"
    r"(?:\s+(?:no\.?|number|#|id))?(?:\s+(?:is|was|=))?\s*[:#]?\s*((?=[A-Z0-9-]*\d)[A-Z0-9][A-Z0-9-]{3,})",
    re.IGNORECASE,
)
_LONG_TOKEN_ID = re.compile(r"\b(?=[A-Za-z0-9-]*\d)(?=[A-Za-z0-9-]*[A-Za-z])[A-Za-z0-9-]{10,}\b")
_STREET_TYPES = (
    r"street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|way|place|pl|"
    r"square|sq|terrace|parkway|pkwy|highway|hwy|strasse|straße|rue|via|calle"
)
_ADDRESS = re.compile(
    rf"\b\d{{1,5}}[A-Za-z]?\s+(?:[A-Z][\w'.-]*\s+){{1,4}}(?:{_STREET_TYPES})\b\.?"
    r"(?:,?\s*(?:apt|apartment|suite|unit|#)\s*\w+)?",
    re.IGNORECASE,
)
_POSTCODE = re.compile(r"\b(?:[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}|\d{5}(?:-\d{4})?)\b")
_NAME_CUE = re.compile(
    r"\b(?i:named|called|name is|i am|i'm|this is|mr\.?|mrs\.?|ms\.?|dr\.?|"
    r"sister|brother|mother|father|mom|mum|dad|wife|husband|partner|friend|son|daughter|"
    r"aunt|uncle|cousin|boss|colleague|coworker|neighbou?r|contact|"
    r"call|text|message|email|tell|ask|meet|with|from|to)\s+"
    r"(?!(?:Dr|Mr|Mrs|Ms|Prof)\b)((?:[A-Z][a-z'’-]+)(?:\s+[A-Z][a-z'’-]+){0,2})"
)
_NOT_NAMES = frozenset(
    "I Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June "
    "July August September October November December Wi Wifi Bluetooth Settings Android The A An "
    "Airplane Do Not Disturb Google Chrome Maps Gmail".split()
)


@dataclass(frozen=True)
class RedactionResult:
    """Redacted text and how many details of each kind were removed."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """Whether anything was redacted."""
        return bool(self.counts)


class Redactor:
    """Replaces personal details with placeholders; pass the names you know about."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        """Args: names: person names to always redact (e.g. from the user's profile and contacts)."""
        known = sorted({n.strip() for n in names if n and n.strip()}, key=len, reverse=True)
        self._known = (
            re.compile(r"\b(?:" + "|".join(re.escape(n) for n in known) + r")\b", re.IGNORECASE)
            if known
            else None
        )

    def redact(self, text: str) -> RedactionResult:
        """Return ``text`` with personal details replaced, and the counts per kind."""
        counts: Counter[str] = Counter()

        def sub(pattern: re.Pattern[str], label: str, value: str, group: int = 0) -> str:
            def repl(m: re.Match[str]) -> str:
                counts[label] += 1
                if group:
                    start, end = m.span(group)
                    return m.group(0)[: start - m.start()] + f"[{label}]" + m.group(0)[end - m.start():]
                return f"[{label}]"

            return pattern.sub(repl, value)

        out = sub(_URL_CRED, "URL", text)
        out = sub(_EMAIL, "EMAIL", out)
        out = sub(_IBAN, "ID", out)
        out = sub(_SSN, "ID", out)
        out = sub(_ID_LABELLED, "ID", out, group=1)
        out = sub(_ADDRESS, "ADDRESS", out)
        out = sub(_CARD, "ID", out)
        out = sub(_PHONE, "PHONE", out)
        out = sub(_POSTCODE, "ADDRESS", out)
        out = sub(_LONG_TOKEN_ID, "ID", out)
        if self._known is not None:
            out = sub(self._known, "NAME", out)
        out = self._redact_cued_names(out, counts)
        return RedactionResult(out, dict(counts))

    @staticmethod
    def _redact_cued_names(text: str, counts: Counter[str]) -> str:
        def repl(m: re.Match[str]) -> str:
            words = m.group(1).split()
            while words and words[0] in _NOT_NAMES:
                words.pop(0)
            if not words:
                return m.group(0)
            name = " ".join(words)
            counts["NAME"] += 1
            return m.group(0).replace(name, "[NAME]", 1)

        return _NAME_CUE.sub(repl, text)
