"""Redact user-specific details before text enters the shared agent-experience store.

Secrets first (:func:`redact_secrets`, also run on every training export): passwords, PINs,
one-time codes, card numbers, IBANs and API keys, found by a cue word followed by a value
("wifi password is …", "PIN: 4 9 2 1", "482913 is your code"), by the shapes of known key
formats, and by an entropy check on long unbroken tokens (a key nobody labelled).

Then, for the shared store, regular expressions plus simple heuristics, tuned to over-redact: emails, phone numbers,
street addresses, card/account/id numbers, URLs with credentials, and person names (names
the caller tells us about, and capitalised words after cues such as ``my sister`` or
``named``). A redacted detail becomes a typed placeholder (``[EMAIL]``, ``[PHONE]`` …) so the
shared record keeps its shape ("texted [NAME] at [PHONE]") without the person.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["RedactionResult", "Redactor", "redact_secrets"]

_SECRET_CUE = (
    r"(?:(?:wi-?fi|wlan|wpa2?|network|router|account|login|bank|e-?mail|admin)\s*)?"
    r"(?:pass(?:word|wd|phrase|code)?s?|pwd|pw|pins?(?:[\s-]?(?:code|number|no\.?))?|cvv2?|cvc|"
    r"security[\s-]?code|one[\s-]?time[\s-]?(?:pass)?(?:code|password|pin)|otp|totp|2fa(?:[\s-]?code)?|"
    r"(?:verification|auth(?:entication|orization)?|login|sign[\s-]?in|confirmation|access|unlock|"
    r"reset|recovery|backup|mfa|sms)[\s-]?code|"
    r"(?:api|access|secret|private|client)[\s_-]?(?:key|token|secret)|secret|(?:auth|bearer|access)?[\s_-]?token|"
    r"(?:wi-?fi|wpa2?|network)[\s-]?key)"
)
_SECRET_VALUE = (
    r"(?:[\"'“‘`](?P<quoted>[^\"'”’`\n]{1,100})[\"'”’`]"
    r"|(?P<digits>\d(?:[ .-]?\d){2,11})(?![\w-])"
    r"|(?P<word>[^\s\"'“”‘’`]+))"
)
_SECRET_LABELLED = re.compile(
    rf"\b(?P<cue>{_SECRET_CUE})\b"
    r"(?P<sep>\s+(?:for|to|of|on)\s+(?:[\w'’-]+\s+){0,3}?[\w'’-]+(?:'s|’s)?\s*(?:\b(?:is|was|are|were)\b|[:=—–-]+)\s*"
    r"|(?:'s|’s)?\s*(?:\b(?:is|was|are|were|be|set\s+to|changed\s+to|to)\b|[:=—–-]+|\s)\s*)"
    r"(?:(?:now|still|just|probably)\s+)?"
    rf"{_SECRET_VALUE}",
    re.IGNORECASE,
)
_CODE_FIRST = re.compile(
    r"\b(?P<digits>\d(?:[ .-]?\d){3,9})\b(?=\s+is\s+(?:your|the|my)\s+(?:[\w-]+\s+){0,3}(?:code|pin|otp|password))",
    re.IGNORECASE,
)
_CODE_VALUE = re.compile(
    r"\b(?:code|otp)\b\s*(?:is|:|=|#)?\s*(?P<digits>[A-Z]?-?\d(?:[ .-]?\d){3,9})(?![\w-])", re.IGNORECASE
)
_API_KEY = re.compile(
    r"\b(?:(?:sk|pk|rk)[-_](?:live|test|proj|ant|or)?[-_]?[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|"
    r"github_pat_[A-Za-z0-9_]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|"
    r"glpat-[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
)
_HIGH_ENTROPY_CANDIDATE = re.compile(r"(?<![\w/.-])[A-Za-z0-9_+/=.~-]{16,}(?![\w/-])")
_HEX = re.compile(r"[0-9a-f-]+|[0-9A-F-]+")
_RUN_SPLIT = re.compile(r"[._/+=~-]")
_MIXED = re.compile(r"[A-Za-z]")
_DIGIT = re.compile(r"\d")
MIN_ENTROPY_BITS = 3.5
"""Shannon entropy per character above which a long mixed token is taken for a key."""
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.UNICODE)
_URL_CRED = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/@:]+:[^\s/@]+@\S+", re.IGNORECASE)
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?[A-Z0-9]{1,3})?\b", re.IGNORECASE)
_CARD = re.compile(r"\b(?:\d[ .-]?){12,18}\d\b")
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


def _entropy(token: str) -> float:
    counts = Counter(token)
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_like_key(token: str) -> bool:
    """A long token with a run mixing letters and digits, and high entropy.

    Runs split at ``._/+=~-``: a file name or a date stamp (``IMG_20240101_123456.jpg``) has
    only all-letter or all-digit runs. Single-case hex (ids, hashes) is not a key here: the
    records' own ids are hex and must survive an export.
    """
    if _HEX.fullmatch(token):
        return False
    if not any(len(run) >= 8 and _MIXED.search(run) and _DIGIT.search(run) for run in _RUN_SPLIT.split(token)):
        return False
    return _entropy(token) >= MIN_ENTROPY_BITS


def _redact_secrets(text: str, counts: Counter[str]) -> str:
    def labelled(m: re.Match[str]) -> str:
        group = next(g for g in ("quoted", "digits", "word") if m.group(g) is not None)
        value = m.group(group)
        if group == "word":
            trimmed = value.rstrip(".,;:)]}")
            bare = not re.search(r"\b(?:is|was|are|were|be|to)\b|[:=—–-]", m.group("sep"), re.IGNORECASE)
            if not trimmed or trimmed.startswith("[") or (bare and not re.search(r"[\d\W_]", trimmed)):
                return m.group(0)  # "password reset", "pin the chat": a cue without a value
            start, end = m.start(group), m.start(group) + len(trimmed)
        else:
            start, end = m.span(group)
        counts["SECRET"] += 1
        return m.group(0)[: start - m.start()] + "[SECRET]" + m.group(0)[end - m.start():]

    def whole(label: str, keep: str = "") -> Callable[[re.Match[str]], str]:
        def repl(m: re.Match[str]) -> str:
            counts[label] += 1
            if keep:
                start, end = m.span(keep)
                return m.group(0)[: start - m.start()] + f"[{label}]" + m.group(0)[end - m.start():]
            return f"[{label}]"

        return repl

    def iban(m: re.Match[str]) -> str:
        if sum(c.isdigit() for c in m.group(0)) < 8:
            return m.group(0)  # "on12 this that": letters, not an account
        counts["ID"] += 1
        return "[ID]"

    def entropy(m: re.Match[str]) -> str:
        token = m.group(0)
        if token.startswith("[") or not _looks_like_key(token):
            return token
        counts["SECRET"] += 1
        return "[SECRET]"

    out = _API_KEY.sub(whole("SECRET"), text)
    out = _SECRET_LABELLED.sub(labelled, out)
    out = _CODE_FIRST.sub(whole("SECRET", "digits"), out)
    out = _CODE_VALUE.sub(whole("SECRET", "digits"), out)
    out = _IBAN.sub(iban, out)
    out = _CARD.sub(whole("ID"), out)
    return _HIGH_ENTROPY_CANDIDATE.sub(entropy, out)


def redact_secrets(text: str) -> str:
    """``text`` with passwords, PINs, one-time codes, card numbers, IBANs and API keys replaced.

    Only secrets: names, phone numbers and addresses stay (training exports keep them; the
    shared store's :class:`Redactor` removes those too).
    """
    return _redact_secrets(text, Counter())


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
        out = _redact_secrets(out, counts)
        out = sub(_SSN, "ID", out)
        out = sub(_ID_LABELLED, "ID", out, group=1)
        out = sub(_ADDRESS, "ADDRESS", out)
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
