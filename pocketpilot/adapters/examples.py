"""η's experience in a session: worked examples in the guidance, step hints as a policy.

:func:`with_experience` is the one place the adapter's session keyword arguments take the
experience library in: given the request, it retrieves a few entries usable for the owner,
adds their rendered worked examples after the routed guidance (re-checked at each step
against the tools exposed then: an example that calls a tool the planner cannot see is
dropped), and puts the ``experience_hints`` policy in force with the entries' step cases.
η without entries, or with its switch off, leaves the arguments exactly as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..policy_registry import build
from .eta import Eta
from .experience import experience_digest, render_examples, retrieve

__all__ = ["with_experience", "with_tool_text"]


def with_experience(
    eta: Eta,
    kwargs: dict[str, Any],
    request: str,
    tools: Sequence[str],
    *,
    owner: str | None = None,
    embedder: Any | None = None,
) -> dict[str, Any]:
    """``kwargs`` (from :func:`~pocketpilot.adapters.session_kwargs`) with η's experience for ``request``.

    When entries were retrieved, wraps ``guidance_for`` and appends the step-hint policy to
    ``policies``; its parameters name the entries shown and the library's digest, so the
    trace header records which experience the run saw.
    """
    cfg = eta.experience_config
    if not eta.experience or not cfg.enabled:
        return kwargs
    picked = retrieve(eta.experience, request, tools=tools, owner=owner, k=cfg.k, embedder=embedder)
    if not picked:
        return kwargs
    out = dict(kwargs)
    inner: Callable[[Sequence[str]], list[str]] | None = kwargs.get("guidance_for")
    rendered: dict[frozenset[str], str] = {}

    def guidance_for(now: Sequence[str]) -> list[str]:
        base = inner(now) if inner is not None else []
        names = frozenset(t if isinstance(t, str) else t.name for t in now)
        if names not in rendered:
            shown = [e for e in picked if set(e.tools) <= names]
            rendered[names] = render_examples(shown, budget_tokens=cfg.budget_tokens)
        return [*base, rendered[names]] if rendered[names] else base

    out["guidance_for"] = guidance_for
    cases = [c.model_dump(mode="json") for e in picked for c in e.steps] if cfg.steps else []
    hint = build([{"name": "experience_hints", "params": {
        "cases": cases, "entries": [e.id for e in picked], "library": experience_digest(eta.experience)}}])
    out["policies"] = [*kwargs.get("policies", []), *hint]
    return out


def with_tool_text(eta: Eta, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``tool_text``: the descriptions η revised, shown in place of the tools' own.

    Unchanged when η revised none (the session then shows exactly what it showed before).
    """
    texts = {name: e.revised_description for name, e in eta.tools.items() if e.revised_description}
    return {**kwargs, "tool_text": texts} if texts else kwargs
