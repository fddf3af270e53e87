"""JSON schemas rewritten into the form llama.cpp's GBNF converter accepts.

Shared by the planner's action grammar and the LLM-simulated executor's result grammar, so
both constrain decoding the same way; it sits beside the contracts because neither package
may import the other.
"""

from __future__ import annotations

from typing import Any

__all__ = ["grammar_friendly"]

_STRIP_KEYS = {"title", "default"}
_MAX_GRAMMAR_LENGTH = 64

# llama.cpp's schema converter copies regex class escapes into GBNF literals, whose parser
# rejects them at sampling time ("unknown escape"); spell them as character classes.
_CLASS_ESCAPES = {r"\d": "[0-9]", r"\w": "[A-Za-z0-9_]", r"\s": "[ \t]"}


def _gbnf_pattern(pattern: str) -> str:
    for escape, cls in _CLASS_ESCAPES.items():
        pattern = pattern.replace(escape, cls)
    return pattern


def grammar_friendly(node: Any, *, lengths: bool = False) -> Any:
    """Drop annotation keys (titles, defaults) that only cost grammar size; keep property names.

    Also rewrites ``pattern`` escapes into a form llama.cpp's grammar parser accepts.

    ``lengths`` keeps every string length bound, for an engine that compiles them into its
    lexer at no cost (llguidance). Without it, long bounds are dropped: validation after
    decoding still applies them, so an output the grammar let through can fail there, and a
    greedy planner writes the same over-long text again on every retry.
    """
    if isinstance(node, dict):
        out = {k: grammar_friendly(v, lengths=lengths) for k, v in node.items()
               if k not in _STRIP_KEYS or isinstance(v, dict)}
        if isinstance(out.get("pattern"), str):
            out["pattern"] = _gbnf_pattern(out["pattern"])
        if lengths:
            return out
        # A length bound becomes one nested optional per character in GBNF: long bounds blow
        # the grammar up past what llama.cpp accepts.
        if isinstance(out.get("maxLength"), int) and out["maxLength"] > _MAX_GRAMMAR_LENGTH:
            del out["maxLength"]
        if isinstance(out.get("minLength"), int) and out["minLength"] > 1:
            out["minLength"] = 1
        return out
    if isinstance(node, list):
        return [grammar_friendly(v, lengths=lengths) for v in node]
    return node
