"""Scope: a device setting that nothing in the request's context names stays as it is.

The 1.5B planner's commonest harmful failure in the capability traces is the settings walk:
it makes the change it was asked for, then turns on Wi-Fi, Bluetooth, do-not-disturb and a
brightness level one step after another (a tool list reads to it like a to-do list), and the
user's phone ends up in a state nobody asked for. A prompt line against it did not hold.

The guard is lexical and deliberately permissive. A *setting tool* is one that declares
effect ``setting`` (``set_wifi``, ``set_ring_mode``; not ``set_alarm_enabled``, which updates
a record the planner looked up): the name is never read. Its terms are the words of its
declared setting key and description and its enum values ("ring", "mode", "vibrate",
"silent"...). A call is in scope when one term occurs in what the run was told or found out:
the request, the evidence (recalled memories), the memories a search returned, and the error
messages of this run's results ("bluetooth is off" grounds turning Bluetooth on). Skill
procedures do not count: they list every setting.

What the run *read* and the guidance the deployment gives are matched strictly
(:func:`names_setting`): by the declared setting key as a phrase ("apn", "ring mode"), so a read
of a record whose fields happen to share a common word with a description ("text", "mode")
grounds nothing. A read grounds by its fields (:func:`result_fields`: keys and short codes, or
a plain-text report whole), never by free text it carries (a message body is another party's
words). A setting tool that declares no key is matched by its declared terms, which is
looser: declaring ``setting=`` makes it exact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..contracts import ToolSpec

__all__ = ["ENGLISH", "FUNCTION_WORDS", "GENERIC_WORDS", "Lexicon", "content_stems", "declared_terms", "is_setting",
           "names_setting", "out_of_scope", "result_fields", "setting_terms"]

FUNCTION_WORDS: tuple[str, ...] = tuple(
    "set turn on off or and the a an in of to its it is be must this that with by for from not do "
    "percent level value state current enabled true false".split()
)
"""English words that never name what a setting is (η data: a policy parameter, see below)."""

GENERIC_WORDS: tuple[str, ...] = tuple(
    "please can could would you your my me our we they them he she his her their all any one new "
    "create return returns list show get give make find look tell now then also just when what which "
    "who how about after before into out up down there here have has was were will want need like "
    "don't dont".split()
)
"""English words too common to tie a memory to a request or a request to a tool (with the
function words)."""


@dataclass(frozen=True)
class Lexicon:
    """The words scope matching ignores, in the request's language.

    English by default; the policies that match words (scope guard, loop guard) take these as
    parameters, so η records them and an app in another language revises η, not this module.
    """

    function_words: frozenset[str] = frozenset(FUNCTION_WORDS)
    generic_words: frozenset[str] = frozenset(FUNCTION_WORDS + GENERIC_WORDS)
    """The function words and the generic ones."""

    @classmethod
    def of(cls, function_words: Iterable[str] | None = None, generic_words: Iterable[str] | None = None) -> Lexicon:
        """A lexicon from word lists (None: the English default for that list)."""
        fw = frozenset(w.lower() for w in (FUNCTION_WORDS if function_words is None else function_words))
        gw = frozenset(w.lower() for w in (GENERIC_WORDS if generic_words is None else generic_words))
        return cls(fw, gw | fw)


ENGLISH = Lexicon()


def _tokens(text: str) -> set[str]:
    """Lowercased words, hyphenated words joined ("Wi-Fi" -> "wifi", "do-not-disturb" -> "donotdisturb" and its parts)."""
    text = text.lower()
    out: set[str] = set()
    for chunk in re.findall(r"[a-z0-9]+(?:[-_][a-z0-9]+)*", text):
        parts = re.split(r"[-_]", chunk)
        out.add("".join(parts))
        out.update(parts)
    return out


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def is_setting(spec: ToolSpec) -> bool:
    """A tool that declares effect ``setting``: it changes a device setting, not a record."""
    return spec.effect == "setting"


def _declared_words(spec: ToolSpec) -> set[str]:
    """The words of a tool's setting key, description and enum values (never its name)."""
    words = _tokens(spec.setting or "") | _tokens(spec.description)
    for prop in (spec.parameters.get("properties", {}) or {}).values():
        for value in prop.get("enum", ()) if isinstance(prop, dict) else ():
            if isinstance(value, str):
                words |= _tokens(value)
    return words


def setting_terms(spec: ToolSpec, lexicon: Lexicon = ENGLISH) -> frozenset[str]:
    """Stems of the words that name what ``spec`` changes (setting key, description, enum values)."""
    return frozenset(_stem(w) for w in _declared_words(spec) if len(w) > 2 and w not in lexicon.function_words)


def out_of_scope(spec: ToolSpec, context: Iterable[str], lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a setting tool's terms occur nowhere in ``context`` (False for other tools)."""
    if not is_setting(spec):
        return False
    terms = setting_terms(spec, lexicon)
    if not terms:
        return False
    seen = {_stem(w) for text in context for w in _tokens(text)}
    return not (terms & seen)


def content_stems(text: str, lexicon: Lexicon = ENGLISH) -> set[str]:
    """Stems of the content words of ``text`` (no function words, no generic verbs)."""
    return {_stem(w) for w in _tokens(text) if len(w) > 2 and w not in lexicon.generic_words}


def declared_terms(spec: ToolSpec, lexicon: Lexicon = ENGLISH) -> frozenset[str]:
    """Stems of the words a tool's declaration uses for what it acts on: its setting key,
    description and enum values (never its name), without generic words.
    """
    return frozenset(_stem(w) for w in _declared_words(spec) if len(w) > 2 and w not in lexicon.generic_words)


def _key_phrase(key: str) -> list[str]:
    return [_stem(p) for p in re.findall(r"[a-z0-9]+", key.lower())]


def names_setting(spec: ToolSpec, text: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether ``text`` names what setting tool ``spec`` changes, strictly.

    By its declared setting key: as a phrase ("ring mode", "ring_mode", "ringmode", "Wi-Fi" for
    ``wifi``). A tool that declares no key is matched by its declared terms without generic
    words (:func:`declared_terms`). False for a tool that is not a setting.
    """
    if not is_setting(spec):
        return False
    if not spec.setting:
        return bool(declared_terms(spec, lexicon) & {_stem(w) for w in _tokens(text)})
    phrase = _key_phrase(spec.setting)
    if not phrase:
        return False
    if _stem("".join(phrase)) in {_stem(w) for w in _tokens(text)}:
        return True
    words = _key_phrase(text)
    n = len(phrase)
    return any(words[i:i + n] == phrase for i in range(len(words) - n + 1))


_MAX_FIELDS = 2000


def result_fields(data: object) -> list[str]:
    """The fields a result's data shows: its keys at any depth and its short codes (string values
    with no space, such as enum values), never free text inside it; a result that is only text
    is the tool's own report, and counts whole.

    A read shows the planner *which* state it looked at by its keys (``{"apn": {...}}``); a
    string with spaces inside structured data is content the world carries (a message body, a
    note), another party's words, which never grant a change. A tool that answers in prose
    ("Current APN Name: internet") speaks for the world, as its error messages do.
    """
    if isinstance(data, str):
        return [data]
    out: list[str] = []
    todo = [data]
    while todo and len(out) < _MAX_FIELDS:
        item = todo.pop()
        if isinstance(item, dict):
            out.extend(str(k) for k in item)
            todo.extend(item.values())
        elif isinstance(item, (list, tuple)):
            todo.extend(item)
        elif isinstance(item, str) and item and not any(c.isspace() for c in item) and len(item) <= 64:
            out.append(item)
    return out
