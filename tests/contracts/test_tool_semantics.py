"""Declared tool semantics: the MCP vocabulary plus effect, record and setting arguments."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import adbutils
import pytest
from pydantic import ValidationError

import pocketpilot.executor.adb.tools as adb_module
import pocketpilot.executor.sandbox.apps as apps_package
from pocketpilot.contracts import ToolEffect, ToolSpec
from pocketpilot.errors import ToolDefinitionError, UsageError
from pocketpilot.executor import tool
from pocketpilot.executor.adb import AdbExecutor
from pocketpilot.executor.mcp import McpExecutor, spec_from_mcp, stdio_server
from pocketpilot.executor.sandbox import EVERYDAY_APPS, SandboxExecutor, SandboxPhone


def _sandbox_specs() -> dict[str, ToolSpec]:
    return {t.name: t for t in SandboxExecutor(SandboxPhone()).tools()}


def _adb_specs() -> dict[str, ToolSpec]:
    ex = AdbExecutor("none", client=adbutils.AdbClient(host="127.0.0.1", port=1))  # never connected
    return {t.name: t for t in ex.tools()}


def test_openai_export_carries_the_semantics_and_the_import_reads_them_back() -> None:
    spec = ToolSpec(
        name="delete_note",
        description="Delete a note by id.",
        parameters={"type": "object", "properties": {"note_id": {"type": "string"}}},
        destructive=True, idempotent=True, effect="delete", id_arg="note_id",
    )
    exported = spec.to_openai()
    assert exported["x-pocketpilot"]["effect"] == "delete" and exported["x-pocketpilot"]["id_arg"] == "note_id"
    assert ToolSpec.from_openai(exported) == spec
    for spec in [*_sandbox_specs().values(), *_adb_specs().values()]:
        assert ToolSpec.from_openai(spec.to_openai()) == spec, spec.name
    setting = _sandbox_specs()["set_ring_mode"]
    back = ToolSpec.from_openai(setting.to_openai())
    assert (back.effect, back.setting, back.idempotent) == ("setting", "ring_mode", True)
    with pytest.raises(ValueError, match="x-pocketpilot"):
        ToolSpec.from_openai({"type": "function", "function": {"name": "x"}, "x-pocketpilot": ["destructive"]})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"read_only": True, "destructive": True}, "read-only tool cannot be destructive"),
        ({"read_only": True, "effect": "delete"}, "cannot have effect"),
        ({"effect": "read", "read_only": False}, "means read_only"),
        ({"effect": "update", "setting": "wifi"}, "only a tool with effect 'setting'"),
        ({"effect": "delete", "id_arg": "nope"}, "not a parameter"),
        ({"effect": "explode"}, "effect"),
    ],
)
def test_inconsistent_semantics_are_rejected(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ToolSpec(name="x", parameters={"type": "object", "properties": {"a": {}}}, **fields)
    with pytest.raises(ValueError, match=message):  # the same through the OpenAI import
        ToolSpec.from_openai({"function": {"name": "x", "parameters": {"type": "object", "properties": {"a": {}}}},
                              "x-pocketpilot": fields})


def test_the_decorator_declares_and_checks_semantics() -> None:
    @tool(effect="delete", destructive=True, id_arg="item_id")
    def drop(item_id: str) -> str:
        """Drop an item."""
        return item_id

    assert (drop.spec.effect, drop.spec.id_arg, drop.spec.needs_confirmation) == ("delete", "item_id", True)

    @tool(effect="read")
    def peek() -> str:
        """Look."""
        return ""

    assert peek.spec.read_only and not peek.spec.needs_confirmation
    with pytest.raises(ToolDefinitionError, match="not a parameter"):
        tool(effect="delete", id_arg="missing")(drop.fn)
    with pytest.raises(ToolDefinitionError, match="read-only"):
        tool(read_only=True, destructive=True)(peek.fn)


def test_confirmation_follows_the_effect_not_only_the_flag() -> None:
    assert ToolSpec(name="x", effect="send").needs_confirmation  # not flagged destructive
    assert ToolSpec(name="x", effect="purchase").needs_confirmation
    assert ToolSpec(name="x", effect="update", destructive=True).effect_label() == "destructive"
    assert not ToolSpec(name="x", effect="setting").needs_confirmation
    assert ToolEffect(effect="send", detail="tap on Send").effect_label() == "send"
    phone = SandboxPhone()
    original = [t for app in EVERYDAY_APPS for t in phone.tool_names(app)]  # the apps before issue 16 §2
    needing = {n for n, s in _sandbox_specs().items() if s.needs_confirmation and n in original}
    assert needing == {"send_sms", "delete_note", "power_off", "delete_alarm", "delete_event"}
    # every money-spending, sending or deleting tool of the newer apps asks, by its effect alone
    for name, spec in _sandbox_specs().items():
        if spec.effect in {"send", "purchase", "delete"}:
            assert spec.needs_confirmation, name
    assert {"send_email", "place_order", "book_trip", "pay_payee", "send_money", "empty_trash"} <= {
        n for n, s in _sandbox_specs().items() if s.needs_confirmation}
    assert not any(s.needs_confirmation for n, s in _sandbox_specs().items() if s.read_only)


def _decorators(module: Any) -> list[tuple[str, ast.expr]]:
    tree = ast.parse(inspect.getsource(module))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if isinstance(target, ast.Name) and target.id == "tool":
                    out.append((node.name, dec))
    return out


def test_every_sandbox_and_adb_tool_declares_its_semantics_on_its_decorator() -> None:
    app_files = sorted(Path(apps_package.__file__).parent.glob("[a-z]*.py"))
    modules = [adb_module, *(importlib.import_module(f"{apps_package.__name__}.{p.stem}") for p in app_files)]
    seen: set[str] = set()
    for module in modules:
        for name, dec in _decorators(module):
            assert isinstance(dec, ast.Call), f"{module.__name__}.{name}: bare @tool"
            keywords = {k.arg for k in dec.keywords}
            assert "idempotent" in keywords and ("effect" in keywords or "destructive" in keywords), name
            seen.add(name)
    assert set(_sandbox_specs()) <= seen and set(_adb_specs()) <= seen
    for name, spec in _adb_specs().items():
        # a tool without a declared effect is a UI action the executor classifies; undeclared it fails closed
        assert spec.effect is not None or (spec.destructive and not spec.idempotent), name


def _mcp(annotations: Any) -> Any:
    return SimpleNamespace(description="d", title=None, input_schema={"type": "object"}, output_schema=None,
                           annotations=annotations)


def _hints(**given: Any) -> Any:
    return SimpleNamespace(**{f"{k}_hint": given.get(k) for k in ("read_only", "destructive", "idempotent", "open_world")})


def test_mcp_tools_without_annotations_get_mcp_defaults() -> None:
    bare = spec_from_mcp(_mcp(None), "x")
    assert (bare.read_only, bare.destructive, bare.idempotent, bare.open_world) == (False, True, False, True)
    assert bare.needs_confirmation
    partial = spec_from_mcp(_mcp(_hints(idempotent=True)), "x")  # one hint given, the rest default
    assert partial.destructive and partial.idempotent and partial.open_world
    reader = spec_from_mcp(_mcp(_hints(read_only=True, destructive=True)), "x")
    assert reader.read_only and not reader.destructive and reader.effect == "read" and not reader.needs_confirmation
    safe = spec_from_mcp(_mcp(_hints(destructive=False, open_world=False)), "x")
    assert not safe.needs_confirmation and not safe.open_world
    assert not spec_from_mcp(_mcp(None), "x", assume_destructive=False).destructive  # explicit opt-out
    declared = spec_from_mcp(_mcp(None), "x", declared={"effect": "send", "destructive": False})
    assert declared.effect == "send" and declared.needs_confirmation


def test_mcp_executor_rejects_unknown_semantics_fields() -> None:
    with pytest.raises(UsageError, match="unknown field"):
        McpExecutor(stdio_server("true"), semantics={"forecast": {"readonly": True}})
