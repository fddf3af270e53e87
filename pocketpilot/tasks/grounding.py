"""State criteria grounded in behaviour: read off the diff an oracle run produced, not written by hand.

For every change the oracle made: a scalar that changed must end at its new value; a record
added to a list must exist afterwards and be new (``created``); a record removed must be gone;
a field of an existing record (found by its ``id``) must hold its new value, the record matched
whole (ids match by containment, so ``dev-1`` alone would also find ``dev-10``). ``unchanged``
then allows exactly the changed paths, so anything else the agent touches fails the task.
Integer siblings of a list that grew (id counters) are allowed but not required: how many ids
an agent burns on the way says nothing about the outcome.
"""

from __future__ import annotations

from typing import Any

from ..executor.sandbox import MISSING, StateChange, resolve_path

__all__ = ["collection_of", "criteria_from_changes", "patch_from_changes", "record_of"]

def _scalar_fields(element: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in element.items()
            if k != "id" and isinstance(v, (str, int, float, bool)) and v != ""
            and not (isinstance(v, str) and len(v) > 200)}


def _list_prefix(dump: Any, path: str) -> tuple[str, int, list[str]] | None:
    """For a path through a list of records (``items.0.enabled``): the list path, index and the rest."""
    parts = path.split(".")
    for i, part in enumerate(parts[:-1]):
        head = ".".join(parts[:i])
        node = resolve_path(dump, head) if head else dump
        if isinstance(node, list) and part.isdigit():
            elem = node[int(part)] if int(part) < len(node) else None
            if isinstance(elem, dict) and "id" in elem:
                return head, int(part), parts[i + 1:]
    return None


def _nest(keys: list[str], value: Any) -> Any:
    for key in reversed(keys):
        value = {key: value}
    return value


def criteria_from_changes(
    before: dict[str, Any], after: dict[str, Any], changes: list[StateChange] | tuple[StateChange, ...]
) -> tuple[list[dict[str, Any]], list[str]]:
    """State criteria (as task-file dicts) and the ``unchanged`` allow-list for ``changes``."""
    criteria: list[dict[str, Any]] = []
    allow: list[str] = []
    grown_parents = set()
    for ch in changes:
        if isinstance(ch.before, list) or isinstance(ch.after, list):
            grown_parents.add(ch.path.rpartition(".")[0])
    for ch in changes:
        parent, _, _ = ch.path.rpartition(".")
        if isinstance(ch.before, list) or isinstance(ch.after, list):
            allow.append(ch.path)
            old = ch.before if isinstance(ch.before, list) else []
            new = ch.after if isinstance(ch.after, list) else []
            old_ids = {e.get("id") for e in old if isinstance(e, dict) and "id" in e}
            new_ids = {e.get("id") for e in new if isinstance(e, dict) and "id" in e}
            for e in new:
                if isinstance(e, dict):
                    if ("id" in e and e["id"] in old_ids) or e in old:
                        continue
                    fields = _scalar_fields(e)
                    if fields:
                        criteria.append({"kind": "state", "path": ch.path, "contains": fields, "created": True})
                elif e not in old:
                    criteria.append({"kind": "state", "path": ch.path, "contains": e, "created": True})
            for e in old:
                if isinstance(e, dict) and "id" in e and e["id"] not in new_ids:
                    criteria.append({"kind": "state", "path": ch.path, "not_contains": {"id": e["id"]}})
            continue
        located = _list_prefix(after, ch.path)
        if located is not None:
            head, index, rest = located
            elem = resolve_path(after, f"{head}.{index}")
            allow.append(head)
            # the whole record as it ends, not just id and field: ids match by containment
            # ("dev-1" is in "dev-10"), so a sibling could satisfy a thinner pattern from the start
            pattern = {"id": elem["id"], **_scalar_fields(elem)} if not rest[1:] else {"id": elem["id"],
                                                                                       **_nest(rest, ch.after)}
            criteria.append({"kind": "state", "path": head, "contains": pattern})
            continue
        allow.append(ch.path)
        if parent in grown_parents and isinstance(ch.after, int) and not isinstance(ch.after, bool):
            continue  # an id counter beside a list that grew
        if ch.after is None and resolve_path(after, ch.path) is MISSING:
            continue  # a key removed: covered by unchanged's allow-list only
        criteria.append({"kind": "state", "path": ch.path, "equals": ch.after})
    return _dedupe(criteria), list(dict.fromkeys(allow))


def _dedupe(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def patch_from_changes(after: dict[str, Any], changes: list[StateChange] | tuple[StateChange, ...]) -> dict[str, Any]:
    """An ``initial_state`` patch that recreates ``changes`` over the base state.

    The loader replaces lists whole, so a change inside a list becomes the whole list as it is in
    ``after``.
    """
    patch: dict[str, Any] = {}
    for ch in changes:
        parts = ch.path.split(".")
        keys: list[str] = []
        for part in parts:
            node = resolve_path(after, ".".join(keys)) if keys else after
            if isinstance(node, list):
                break
            keys.append(part)
        value = resolve_path(after, ".".join(keys))
        if value is MISSING:
            continue
        cursor = patch
        for key in keys[:-1]:
            cursor = cursor.setdefault(key, {})
        cursor[keys[-1]] = value
    return patch


def collection_of(dump: Any, record_id: str) -> str | None:
    """The dotted path of the list that holds the record whose ``id`` is ``record_id``."""

    def walk(node: Any, path: str) -> str | None:
        if isinstance(node, dict):
            for k, v in node.items():
                if (found := walk(v, f"{path}.{k}" if path else str(k))) is not None:
                    return found
        elif isinstance(node, list):
            if any(isinstance(v, dict) and v.get("id") == record_id for v in node):
                return path
            for v in node:
                if (found := walk(v, path)) is not None:
                    return found
        return None

    return walk(dump, "")


def record_of(dump: Any, record_id: str) -> dict[str, Any] | None:
    """The record (a dict in some list) whose ``id`` is ``record_id``."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if found:
            return
        if isinstance(node, dict):
            if node.get("id") == record_id:
                found.append(node)
                return
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(dump)
    return found[0] if found else None
