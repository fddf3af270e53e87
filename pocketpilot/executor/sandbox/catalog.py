"""What the sandbox world holds: its apps, their domains and tools, as data.

Reporting groups results by domain, and the task generator walks apps and their tools'
declared semantics from here rather than importing every app module.
"""

from __future__ import annotations

import inspect

from pydantic import BaseModel, ConfigDict

from ...contracts import ToolSpec
from .apps import App
from .state import PhoneState

__all__ = ["AppEntry", "SandboxCatalog", "build_catalog"]


class AppEntry(BaseModel):
    """One app: its name (what task files list), domain, description and tools' specs."""

    model_config = ConfigDict(frozen=True)

    name: str
    domain: str
    description: str
    section: str | None
    """The ``PhoneState`` field the app keeps its records in, when it has one of its own."""
    package: str | None
    """The Android package it appears as on the simulated phone."""
    label: str | None
    tools: list[ToolSpec]


class SandboxCatalog(BaseModel):
    """Every sandbox app, in the order the planner sees their tools."""

    model_config = ConfigDict(frozen=True)

    apps: list[AppEntry]

    @property
    def domains(self) -> list[str]:
        """Domains with at least one app, in first-seen order."""
        return list(dict.fromkeys(a.domain for a in self.apps))

    @property
    def tool_count(self) -> int:
        """Tools over all apps."""
        return sum(len(a.tools) for a in self.apps)

    def by_domain(self) -> dict[str, list[str]]:
        """Domain → app names."""
        out: dict[str, list[str]] = {}
        for a in self.apps:
            out.setdefault(a.domain, []).append(a.name)
        return out


def build_catalog(apps: dict[str, App], tools_of: dict[str, list[ToolSpec]]) -> SandboxCatalog:
    """The catalog of ``apps`` (name → bound app) with ``tools_of`` (name → its tools' specs)."""
    entries = []
    for name, app in apps.items():
        section = getattr(type(app), "section", None)
        entries.append(AppEntry(
            name=name,
            domain=type(app).domain,
            description=inspect.getdoc(type(app)) or "",
            section=section if section in PhoneState.model_fields else None,
            package=type(app).package,
            label=type(app).label,
            tools=tools_of[name],
        ))
    return SandboxCatalog(apps=entries)


