"""η's default word lists: which action kinds a request must ask for, and the router's stop words.

Plain data with no model of their own, apart from :mod:`~pocketpilot.adapters.notes` (which
builds on η's note model), so that η can read its defaults without importing the notes.
"""

from __future__ import annotations

__all__ = ["DEFAULT_OFFERS", "DEFAULT_STOP_WORDS"]

DEFAULT_OFFERS: dict[str, str] = {
    "memory_write": r"\b(remember|don'?t forget|do not forget|keep in mind|from now on|remind me|memori[sz]e|note to self)\b",
    "delegate": r"\b(helper|sub-?agent|assistant)s?\b|\bdelegate\b",
}
"""Action kinds offered only when the request matches (case-insensitive), by default in English.

Offered on every request, the 1.5B planner wrote memories nobody asked for and handed plain
one-app requests to a sub-agent as an escape; these are η data, so an app in another language
(or one that wants delegation always) changes them by a reviewed revision, not in code. The
delegate pattern is the ``subagent.artifacts`` note's ``when_request``: action and note go together."""

DEFAULT_STOP_WORDS: tuple[str, ...] = tuple(
    "a an and any are as at be by do does for from get go has have how i if in is it its me my "
    "no not of on one only or so that the their them then there this to up was what when which who "
    "whose will with you your each every other another still same more less they".split()
    # verbs every skill description shares: they say nothing about which skill
    + "set read list create delete start stop status enabled info current turn off answer "
    "check make add find change phone".split()
)
"""Words the skill router ignores on both sides (request, skill keywords and descriptions), in
English by default: η data (``Eta.stop_words``), so an app in another language, or one whose
skills share other filler words, revises η instead of this module."""
