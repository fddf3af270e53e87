"""What the sandbox world holds: its apps, their domains and tools, as data.

Reporting groups results by domain, and the task generator walks apps and their tools'
declared semantics from here rather than importing every app module.
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any, get_args, get_origin

from pydantic import BaseModel, ConfigDict

from ...contracts import ToolSpec
from .apps import App
from .state import PhoneState

__all__ = ["AppEntry", "RecordList", "SandboxCatalog", "build_catalog", "record_lists"]


class RecordList(BaseModel):
    """A list of records in the state: where it is, and which field names a record for a person."""

    model_config = ConfigDict(frozen=True)

    path: str
    """Dotted path of the list, e.g. ``email.items``."""
    name_field: str
    """``name``, ``title`` or ``label``: what a user calls a record by (``id`` if nothing)."""
    fields: list[str]
    """Every field of its records (``id`` first)."""


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
    records: list[RecordList]
    """The record lists of its section (empty for settings-only sections and apps without one)."""
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
            records=record_lists(section) if section in PhoneState.model_fields else [],
            tools=tools_of[name],
        ))
    return SandboxCatalog(apps=entries)




def _list_item(annotation: Any) -> Any:
    """The item type of ``list[X]`` (through Optional/Annotated), else None."""
    while get_origin(annotation) in (typing.Annotated, typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        annotation = args[0]
    return get_args(annotation)[0] if get_origin(annotation) is list else None


def record_lists(section: str) -> list[RecordList]:
    """The lists of records with an ``id`` in a ``PhoneState`` section, with their name field."""
    model = PhoneState.model_fields[section].annotation
    out: list[RecordList] = []
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return out
    for field, info in model.model_fields.items():
        item = _list_item(info.annotation)
        if isinstance(item, type) and issubclass(item, BaseModel) and "id" in item.model_fields:
            names = [f for f in ("name", "title", "label") if f in item.model_fields]
            out.append(RecordList(path=f"{section}.{field}", name_field=names[0] if names else "id",
                                  fields=list(item.model_fields)))
    return out
