"""The sandbox world as a whole: size, domains, declared semantics, regular state sections.

Also pins what issue 16 §2 must not change: the original apps' tool specs and their state in
the default world, as digests recorded before the new apps were added.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest

from pocketpilot.cli.main import cli
from pocketpilot.executor.sandbox import PhoneState, SandboxPhone, default_state
from pocketpilot.executor.sandbox.apps import APP_CLASSES, DOMAINS

CATALOG = SandboxPhone().catalog()
SPECS = [spec for app in CATALOG.apps for spec in app.tools]

ORIGINAL_APPS = ("settings", "earbuds", "notes", "contacts", "messages", "health", "converter", "calculator", "cast",
                 "power", "launcher", "clock", "calendar")
ORIGINAL_FIELDS = ("now", "seed", "device", "settings", "earbuds", "notes", "contacts", "messages", "health", "cast",
                   "alarms", "calendar", "installed_apps", "foreground_app")
# Recorded at 75ab2a8, before the new apps: their tool specs and their part of the default world.
ORIGINAL_SPECS_SHA = "62fc54a4262c2cf63b3bde5fcd9cc6b0ec88df4984de70d6737579faf81dc684"
ORIGINAL_STATE_SHA = {
    0: "294f7ed124d4acfd3b6a59ff0da032816f2d604c5780fdb1721642f2fa7c0091",
    3: "5e1242590264e01002e0f95ca68025bddd815fbd93fa5fd39c5be59ee25525a6",
}


def _sha(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def test_the_world_is_big_enough() -> None:
    assert len(CATALOG.apps) >= 20
    assert CATALOG.tool_count >= 150
    assert len(CATALOG.domains) >= 13
    assert CATALOG.tool_count == len(SandboxPhone().registry().names())  # no tool outside an app


def test_every_app_declares_a_known_domain_and_a_real_section() -> None:
    assert [a.name for a in CATALOG.apps] == [cls.name for cls in APP_CLASSES]
    assert len({a.name for a in CATALOG.apps}) == len(CATALOG.apps)
    for entry in CATALOG.apps:
        assert entry.domain in DOMAINS, entry.name
        assert entry.description and entry.tools, entry.name
    new = [a for a in CATALOG.apps if a.name not in ORIGINAL_APPS]
    assert len(new) >= 8 and all(a.section in PhoneState.model_fields for a in new)
    assert set(CATALOG.domains) == set(CATALOG.by_domain())


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_tool_declares_consistent_semantics(spec: Any) -> None:
    assert spec.effect is not None, "every sandbox tool declares its effect"
    assert spec.read_only == (spec.effect == "read")
    if spec.read_only:
        assert not spec.destructive and spec.idempotent
    if spec.destructive:
        # irreversible: something is removed, sent, spent, or (power off) switched off for good
        assert spec.effect in {"delete", "send", "purchase", "update"}, spec.effect
    if spec.effect in {"send", "purchase"}:
        assert spec.open_world and spec.needs_confirmation
    if spec.effect == "delete":
        assert spec.needs_confirmation
    props = spec.parameters.get("properties", {})
    for arg in (spec.id_arg, spec.name_arg):
        assert arg is None or arg in props
    assert (spec.setting is not None) == (spec.effect == "setting")
    assert spec.description and len(spec.description) <= 100 and "\n" not in spec.description
    for arg, schema in props.items():
        assert schema.get("description"), f"{spec.name}.{arg} has no description"
    assert spec.parameters.get("additionalProperties") is False


def test_record_tools_of_the_new_apps_name_their_record() -> None:
    # a tool whose first parameter is a record id declares it, so undo and generators find it
    for entry in CATALOG.apps:
        if entry.name in ORIGINAL_APPS:
            continue
        for spec in entry.tools:
            props = list(spec.parameters.get("properties", {}))
            if props and props[0].endswith("_id") and props[0] in spec.parameters.get("required", []):
                assert spec.id_arg == props[0], spec.name
            if spec.effect in {"delete"}:
                assert spec.id_arg is not None or not props, spec.name


def test_setting_keys_are_unique() -> None:
    keys = [s.setting for s in SPECS if s.setting]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("entry", [a for a in CATALOG.apps if a.name not in ORIGINAL_APPS], ids=lambda a: a.name)
def test_new_sections_are_regular_for_a_generic_generator(entry: Any) -> None:
    """Record lists of records with an id and a name or title; ids below the section's next_id."""
    model = PhoneState.model_fields[entry.section].annotation
    data = default_state().model_dump(mode="json")[entry.section]
    if not entry.records:  # a settings-only section (accessibility): plain values, no records
        assert all(not isinstance(v, (list, dict)) for v in data.values())
        assert all(f"set_{k}" in {s.name for s in entry.tools} or k == "font_scale" for k in data)
        return
    assert "next_id" in model.model_fields
    seen: set[str] = set()
    for records in entry.records:
        assert records.name_field in {"name", "title"}, records.path
        assert records.fields[0] == "id"
        items = data[records.path.split(".", 1)[1]]
        for item in items:
            assert item["id"] not in seen, item["id"]  # ids are unique across the section's lists
            seen.add(item["id"])
            number = re.fullmatch(r"[a-z]+-(\d+)", item["id"])
            assert number, item["id"]
            assert int(number.group(1)) < data["next_id"], (entry.section, item["id"])  # a new id never collides
            assert item[records.name_field], item["id"]
    assert seen, f"{entry.section} is seeded with records"


def test_the_original_apps_and_their_default_world_are_untouched() -> None:
    phone = SandboxPhone()
    tools = [phone.registry()[t].spec for a in ORIGINAL_APPS for t in phone.tool_names(a)]
    # the identity the phone declares for its tools came later (issue 34); the rest is as recorded
    # and so did the converter's declared fixable error and the apps' artifact and name fields
    # (issue 33), which lists in the policies named before, and the id field of their records
    assert {t.world for t in tools} == {"sandbox"}
    assert {t.name: t.fixable_errors for t in tools if t.fixable_errors} == {"convert_units": ["unsupported_unit"]}
    assert all(t.artifact_fields and t.name_fields and t.id_field == "id" for t in tools)
    specs = [t.model_dump(mode="json", exclude={"world", "fixable_errors", "artifact_fields", "name_fields",
                                                 "id_field"})
             for t in tools]
    assert len(specs) == 37 and _sha(specs) == ORIGINAL_SPECS_SHA
    for seed, digest in ORIGINAL_STATE_SHA.items():
        dumped = default_state(seed).model_dump(mode="json")
        assert _sha({k: dumped[k] for k in ORIGINAL_FIELDS}) == digest
    # the new sections are seeded without a draw: only the health history follows the seed
    a, b = default_state(0).model_dump(), default_state(1).model_dump()
    assert {k for k in a if a[k] != b[k]} == {"health", "seed"}


def test_cli_lists_apps_tools_and_domains(capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(args=["sandbox", "apps", "--json"], prog_name="pocketpilot", standalone_mode=False)
    out = json.loads(capsys.readouterr().out)
    assert out["totals"] == {"apps": len(CATALOG.apps), "tools": CATALOG.tool_count, "domains": len(CATALOG.domains)}
    assert {a["name"]: len(a["tools"]) for a in out["apps"]} == {a.name: len(a.tools) for a in CATALOG.apps}
    cli.main(args=["sandbox", "apps"], prog_name="pocketpilot", standalone_mode=False)
    text = capsys.readouterr().out
    assert text.rstrip().endswith(f"{len(CATALOG.apps)} apps, {CATALOG.tool_count} tools, {len(CATALOG.domains)} domains")


async def test_after_power_off_every_new_tool_fails_with_device_off() -> None:
    from pocketpilot.contracts import ToolCall
    from pocketpilot.executor.sandbox import SandboxExecutor

    phone = SandboxPhone()
    ex = SandboxExecutor(phone)
    assert (await ex.call(ToolCall(name="power_off"))).ok
    frozen = phone.snapshot()
    tried = 0
    for entry in CATALOG.apps:
        if entry.name in ORIGINAL_APPS:
            continue
        for spec in entry.tools:
            if spec.parameters.get("required"):
                continue  # arguments are checked first; the gate is the same for every tool
            result = await ex.call(ToolCall(name=spec.name))
            assert result.error is not None and result.error.code == "device_off", spec.name
            tried += 1
    assert tried >= 30 and phone.state == frozen


def test_every_tool_schema_becomes_a_llama_cpp_grammar() -> None:
    """The planner constrains decoding with a grammar built from the tools' schemas."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from pocketpilot.harness.action_schema import action_json_schema

    for spec in SPECS:
        llama_cpp.LlamaGrammar.from_json_schema(json.dumps(action_json_schema([spec])), verbose=False)


ERROR_CODES = {"not_found", "invalid_arguments", "precondition_failed", "conflict", "ambiguous", "insufficient_funds",
               "out_of_stock", "permission_denied"}
"""The failure vocabulary of the apps added with issue 16 §2 (plus device_off from the power gate)."""


def test_the_new_apps_fail_with_a_small_shared_vocabulary_of_codes() -> None:
    import ast
    import inspect

    import pocketpilot.executor.sandbox.apps._payments as payments
    import pocketpilot.executor.sandbox.apps._records as records

    modules = [records, payments, *(inspect.getmodule(type(app)) for app in SandboxPhone().apps.values()
                                    if type(app).name not in ORIGINAL_APPS)]
    used: set[str] = set()
    for module in modules:
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ToolFailure":
                code = node.args[0]
                assert isinstance(code, ast.Constant), f"{module.__name__}: a computed error code"
                used.add(code.value)
    assert used <= ERROR_CODES, used - ERROR_CODES
    assert {"insufficient_funds", "out_of_stock", "permission_denied", "precondition_failed"} <= used
