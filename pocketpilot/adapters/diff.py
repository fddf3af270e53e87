"""A readable semantic diff between two η: what a reviewer needs to approve a revision.

Changes are reported by meaning, not by line: tools, skills and notes added or removed, and
for changed ones the field that changed (a tool's parameter schema field by field).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from .delegation import DelegationSettings
from .eta import Eta, RoutingNote
from .placement import MemorySettings

__all__ = ["EtaChange", "diff_eta", "render_diff"]


@dataclass(frozen=True)
class EtaChange:
    """One semantic change.

    Attributes:
        section: ``tool``, ``skill``, ``note``, ``policy``, ``offer``, ``stop_words`` (before:
            the words removed, after: the words added), ``experience`` (an entry by id; ``*``:
            the switch and budget), ``memory`` (η's memory section, key by key) or ``delegation``
            (its hand-off switches, key by key).
        name: the tool/skill name or note id.
        change: ``added``, ``removed`` or ``changed``.
        field: for ``changed``, the dotted field (``parameters.properties.level.maximum``).
        before: the old value (``changed``/``removed``), JSON-able.
        after: the new value (``changed``/``added``), JSON-able.
    """

    section: Literal["tool", "skill", "note", "policy", "offer", "stop_words", "experience", "memory", "delegation"]
    name: str
    change: Literal["added", "removed", "changed"]
    field: str = ""
    before: Any = None
    after: Any = None


def _walk(section: Any, name: str, prefix: str, a: Any, b: Any, out: list[EtaChange]) -> None:
    """Field-level differences of two JSON values (dicts by key; other values whole)."""
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            path = f"{prefix}.{key}" if prefix else key
            if key not in a:
                out.append(EtaChange(section, name, "changed", path, None, b[key]))
            elif key not in b:
                out.append(EtaChange(section, name, "changed", path, a[key], None))
            else:
                _walk(section, name, path, a[key], b[key], out)
        return
    out.append(EtaChange(section, name, "changed", prefix, a, b))


def _keyed(section: Any, a: dict[str, Any], b: dict[str, Any], out: list[EtaChange]) -> None:
    for name in sorted(set(a) | set(b)):
        if name not in a:
            out.append(EtaChange(section, name, "added", after=b[name]))
        elif name not in b:
            out.append(EtaChange(section, name, "removed", before=a[name]))
        else:
            _walk(section, name, "", a[name], b[name], out)


def _notes(notes: list[RoutingNote]) -> dict[str, Any]:
    return {n.id: n.model_dump(mode="json", exclude={"id"}) for n in notes}


def diff_eta(a: Eta, b: Eta) -> list[EtaChange]:
    """Every semantic change from ``a`` to ``b`` (empty iff the versions are equal)."""
    out: list[EtaChange] = []
    _keyed("tool", {k: v.model_dump(mode="json") for k, v in a.tools.items()},
           {k: v.model_dump(mode="json") for k, v in b.tools.items()}, out)
    _keyed("skill", {k: v.model_dump(mode="json") for k, v in a.skills.items()},
           {k: v.model_dump(mode="json") for k, v in b.skills.items()}, out)
    _keyed("note", _notes(a.notes), _notes(b.notes), out)
    order_a = [n.id for n in a.notes if n.id in {m.id for m in b.notes}]
    order_b = [n.id for n in b.notes if n.id in {m.id for m in a.notes}]
    if order_a != order_b:
        out.append(EtaChange("note", "*", "changed", "order", order_a, order_b))
    _keyed("offer", dict(a.offers), dict(b.offers), out)
    if a.stop_words != b.stop_words:
        sa, sb = set(a.stop_words), set(b.stop_words)
        out.append(EtaChange("stop_words", "*", "changed", "", sorted(sa - sb), sorted(sb - sa)))
    _keyed("policy", {p.name: p.params for p in a.policies}, {p.name: p.params for p in b.policies}, out)
    _keyed("experience", {e.id: e.model_dump(mode="json", exclude={"id"}) for e in a.experience},
           {e.id: e.model_dump(mode="json", exclude={"id"}) for e in b.experience}, out)
    if a.experience_config != b.experience_config:
        _walk("experience", "*", "config", a.experience_config.model_dump(mode="json"),
              b.experience_config.model_dump(mode="json"), out)
    if a.memory != b.memory:  # None is the harness's defaults: compared as the defaults' values
        _walk("memory", "*", "", (a.memory or MemorySettings.defaults()).model_dump(mode="json"),
              (b.memory or MemorySettings.defaults()).model_dump(mode="json"), out)
        if a.memory is None or b.memory is None:
            out.append(EtaChange("memory", "*", "added" if a.memory is None else "removed"))
    if a.delegation != b.delegation:  # None runs every switch off: compared as those values
        _walk("delegation", "*", "", (a.delegation or DelegationSettings()).model_dump(mode="json"),
              (b.delegation or DelegationSettings()).model_dump(mode="json"), out)
        if a.delegation is None or b.delegation is None:
            out.append(EtaChange("delegation", "*", "added" if a.delegation is None else "removed"))
    porder_a = [p.name for p in a.policies if p.name in {q.name for q in b.policies}]
    porder_b = [p.name for p in b.policies if p.name in {q.name for q in a.policies}]
    if porder_a != porder_b:
        out.append(EtaChange("policy", "*", "changed", "order", porder_a, porder_b))
    return out


def _short(value: Any, limit: int = 90) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_diff(a: Eta, b: Eta, changes: list[EtaChange] | None = None) -> str:
    """The diff as text: ``+`` added, ``-`` removed, ``~`` changed field by field."""
    changes = diff_eta(a, b) if changes is None else changes
    lines = [f"η {a.version} -> {b.version}: {len(changes)} change(s)"]
    for c in changes:
        if c.change == "added":
            extra = f": {c.after.get('text')!r}" if c.section == "note" else ""
            if c.section == "experience":
                extra = f": {c.after.get('request')!r} ({len(c.after.get('calls', []))} calls, " \
                        f"from {len(c.after.get('provenance', []))} episode(s))"
            lines.append(f"+ {c.section} {c.name}{extra}")
        elif c.change == "removed":
            lines.append(f"- {c.section} {c.name}")
        else:
            lines.append(f"~ {c.section} {c.name}: {c.field}: {_short(c.before)} -> {_short(c.after)}")
    return "\n".join(lines)
