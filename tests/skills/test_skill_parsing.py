from __future__ import annotations

import pytest

from pocketpilot.errors import ContractError
from pocketpilot.executor.sandbox import SandboxPhone
from pocketpilot.skills import (
    DependsOnResultGate,
    RequiresPriorSuccessGate,
    SkillError,
    SkillLibrary,
    StopBeforeStartGate,
    UnknownSkillError,
    parse_skill,
    read_skill,
)

GOOD = """---
name: demo
description: A demo skill.
version: 1.0
requires: [create_note, power_off]
exposes: [read_note]
preconditions:
  - requires_prior_success: {tool: power_off, needs: create_note, with_result_field: id}
  - {kind: depends_on_result, tool: [read_note], waits_for: create_note, argument: note_id, when: loaded}
---
1. Save the note.
2. Power off.
"""


def test_parses_front_matter_body_and_compiles_gates():
    skill = parse_skill(GOOD, "demo/SKILL.md", folder="demo")
    assert skill.name == "demo"
    assert skill.meta.version == "1.0"  # YAML float becomes a label
    assert skill.body.startswith("1. Save the note.")
    assert [type(g) for g in skill.gates] == [RequiresPriorSuccessGate, DependsOnResultGate]
    first, second = skill.gates
    assert first.tools == {"power_off"} and first.needs == {"create_note"} and first.with_result_field == "id"
    assert second.when == "loaded" and second.argument == "note_id"
    assert skill.governs == {"create_note", "power_off", "read_note"}
    loaded = skill.load()
    assert loaded.exposes == ["read_note"] and loaded.guidance.startswith("1. Save the note.")
    assert "A demo skill." not in loaded.guidance and len(loaded.gates) == 2


def _replace(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new)


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("name: demo\n", "", "must start with a '---'"),
        ("---\nname: demo\n", "", "not closed"),
        ("---\n[unclosed\n---\nbody\n", "", "not valid YAML"),
        ("---\n- a\n- b\n---\nbody\n", "", "must be a mapping"),
        (_replace("description: A demo skill.\n", ""), "description", "Field required"),
        (_replace("name: demo", "name: Demo Skill"), "name", "pattern"),
        (_replace("name: demo", "name: other"), "name", "folder name"),
        (_replace("version: 1.0\n", "version: 1.0\ncolour: red\n"), "colour", "Extra inputs"),
        (_replace("requires: [create_note, power_off]", "requires: [create_note, create_note]"), "requires", "twice"),
        (_replace("needs: create_note,", "needz: create_note,"), "preconditions[0].needs", "Field required"),
        (_replace("requires_prior_success:", "requires_success:"), "preconditions", "unknown precondition kind"),
        (_replace("waits_for: create_note", "on: create_note"), "preconditions", "YAML reads on/off"),
        (_replace("when: loaded", "when: sometimes"), "preconditions[1].when", "'always' or 'loaded'"),
        (GOOD.split("---\n1.")[0] + "---\n\n", "body", "empty"),
    ],
)
def test_bad_skill_files_name_file_and_field(text, field, reason):
    with pytest.raises(SkillError) as info:
        parse_skill(text, "skills/demo/SKILL.md", folder="demo")
    err = info.value
    assert isinstance(err, ContractError)
    assert err.source == "skills/demo/SKILL.md"
    assert err.field == field
    assert reason in str(err)
    assert "skills/demo/SKILL.md" in str(err)


def test_read_skill_missing_file_and_bad_utf8(tmp_path):
    folder = tmp_path / "demo"
    folder.mkdir()
    with pytest.raises(SkillError, match="no SKILL.md"):
        read_skill(folder)
    (folder / "SKILL.md").write_bytes(b"---\nname: \xff\n---\n")
    with pytest.raises(SkillError, match="cannot read"):
        read_skill(folder)


def test_library_from_dir_duplicate_and_unknown(tmp_path):
    for name in ("demo", "other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SKILL.md").write_text(GOOD.replace("name: demo", f"name: {name}"))
    lib = SkillLibrary.from_dir(tmp_path)
    assert lib.names() == ["demo", "other"]
    with pytest.raises(UnknownSkillError, match="no skill named 'nope'"):
        lib.load("nope")
    with pytest.raises(SkillError, match="also defined"):
        SkillLibrary([lib.get("demo"), lib.get("demo")])
    with pytest.raises(SkillError, match="does not exist"):
        SkillLibrary.from_dir(tmp_path / "missing")
    with pytest.raises(SkillError) as info:
        lib.check_tools(["create_note", "power_off"])  # read_note unknown
    assert info.value.field == "exposes"


def test_builtin_library_covers_every_sandbox_app():
    lib = SkillLibrary.builtin()
    phone = SandboxPhone()
    lib.check_tools(phone.registry().names())  # no typo in any skill
    governed = set().union(*(s.governs for s in lib.skills()))
    for app in phone.apps:
        assert governed & set(phone.tool_names(app)), f"no skill covers the {app} app"
    assert "conflict-arbiter" in lib
    kinds = {p.kind for s in lib.skills() for p in s.meta.preconditions}
    assert kinds == {"requires_prior_success", "stop_before_start", "query_before_toggle", "depends_on_result"}


def test_available_needs_all_required_tools():
    lib = SkillLibrary.builtin()
    assert "note-before-power-off" in lib.available(["create_note", "power_off"])
    assert "note-before-power-off" not in lib.available(["power_off"])
    assert "conflict-arbiter" in lib.available([])  # requires nothing


def test_always_on_gates_drop_unexposed_and_unsatisfiable():
    lib = SkillLibrary.builtin()
    cast_only = lib.always_on_gates(["start_cast"])  # neither status nor stop exposed
    assert not any(isinstance(g, StopBeforeStartGate) for g in cast_only)
    cast = lib.always_on_gates(["start_cast", "get_cast_status", "stop_cast"])
    assert any(g.tools == {"start_cast"} and g.skill == "screen-cast" for g in cast)
    assert all(g.when == "always" for g in lib.always_on_gates())
    # a loaded-only precondition is not always on
    assert not any(g.skill == "note-before-power-off" for g in lib.always_on_gates(["create_note", "power_off"]))
