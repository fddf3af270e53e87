"""Harness policies by the name η gives them: a registry the adapters read without the harness.

η (:mod:`pocketpilot.adapters`) names the policies a harness runs under, checks a revision's
names and parameters, and builds the set for a session; the policies live in the harness,
which sits above the adapters. So the harness registers its policies here, by name, with the
default set, when :mod:`pocketpilot.harness.policies` is imported (importing ``pocketpilot``
does), and the adapters read this module alone: no import arrow points up to the harness.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

from .errors import UsageError

__all__ = ["PolicyError", "RegisteredPolicy", "build", "default_entries", "register", "registered", "set_defaults"]


class PolicyError(UsageError):
    """A policy set names an unknown policy or gives it parameters it does not take."""


class RegisteredPolicy(Protocol):
    """What the registry needs of a policy class: its name, whether η may remove it, a constructor."""

    name: str
    safety: bool

    def __call__(self, **params: Any) -> Any:
        """A fresh policy with these parameters (a ``TypeError``/``ValueError`` for bad ones)."""


P = TypeVar("P")
_REGISTRY: dict[str, Any] = {}
_DEFAULTS: list[Callable[[], list[dict[str, Any]]]] = []


def register(cls: P) -> P:
    """Register a policy class under its ``name`` (later registrations of a name replace it)."""
    _REGISTRY[cls.name] = cls  # type: ignore[attr-defined]
    return cls


def registered() -> Mapping[str, RegisteredPolicy]:
    """The registered policy classes by name, in registration order (read-only)."""
    return MappingProxyType(_REGISTRY)


def set_defaults(entries: Callable[[], list[dict[str, Any]]]) -> None:
    """Register what the default policy set is, in η's form (``[{"name": ..., "params": ...}]``)."""
    _DEFAULTS[:] = [entries]


def default_entries() -> list[dict[str, Any]]:
    """The harness's default set in η's form.

    Raises:
        PolicyError: no harness registered its policies (``pocketpilot.harness`` not imported).
    """
    if not _DEFAULTS:
        raise PolicyError("no policies are registered: import pocketpilot (the harness registers them)")
    return _DEFAULTS[0]()


def build(entries: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Build policies from η's entries (``name`` plus ``params``).

    Raises:
        PolicyError: an unknown name, or parameters the policy does not take.
    """
    out: list[Any] = []
    for entry in entries:
        name = entry.get("name")
        cls = _REGISTRY.get(str(name))
        if cls is None:
            raise PolicyError(f"unknown policy {name!r}; known: {', '.join(_REGISTRY)}")
        try:
            out.append(cls(**dict(entry.get("params") or {})))
        except (TypeError, ValueError) as exc:
            raise PolicyError(f"policy {name!r}: {exc}") from exc
    return out
