from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from pocketpilot.adapters import (
    AddNote,
    EtaError,
    EtaIntegrityError,
    GuidanceFilter,
    MapTool,
    RemoveNote,
    Revision,
    RevisionError,
    RevisionStore,
    RoutingNote,
    apply_revision,
    compile_eta,
    diff_eta,
    load_eta,
    render_diff,
    sandbox_tool_apps,
    save_eta,
    session_kwargs,
)
from pocketpilot.cli.adapter import adapter
from pocketpilot.contracts import ToolSpec
from pocketpilot.skills import SkillLibrary
from pocketpilot.skills.errors import SkillError


@pytest.fixture(scope="module")
def lib():
    return SkillLibrary.builtin()


@pytest.fixture(scope="module")
def inputs():
    return sandbox_tool_apps()


@pytest.fixture(scope="module")
def eta(lib, inputs):
    tools, apps = inputs
    return compile_eta(tools, lib, apps=apps)


def test_compile_maps_tools_to_apps_and_skills(eta):
    assert set(eta.app_tools("cast")) == {"get_cast_status", "start_cast", "stop_cast"}
    assert "screen-cast" in eta.tools["start_cast"].skills
    assert "safe-power-off" in eta.tools["power_off"].skills
    assert eta.tools["power_off"].destructive
    assert eta.skills["screen-cast"].preconditions[0]["kind"] == "stop_before_start"


def test_hash_is_stable_and_content_sensitive(lib, inputs, eta):
    tools, apps = inputs
    again = compile_eta(list(reversed(tools)), lib, apps=apps)
    assert again.version == eta.version and len(eta.version) == 16
    assert eta.model_copy(update={"notes": eta.notes[1:]}).version != eta.version
    changed = [t if t.name != "set_wifi" else t.model_copy(update={"description": "Wi-Fi."}) for t in tools]
    assert compile_eta(changed, lib, apps=apps).version != eta.version


def test_save_load_roundtrip_atomic_and_tamper_detected(eta, tmp_path):
    path = save_eta(eta, tmp_path / "sub" / "eta.json")
    assert load_eta(path) == eta
    assert [p.name for p in path.parent.iterdir()] == ["eta.json"]  # no temp file left behind
    raw = json.loads(path.read_text())
    raw["eta"]["notes"][0]["text"] = "edited by hand"
    path.write_text(json.dumps(raw))
    with pytest.raises(EtaIntegrityError, match="recompile"):
        load_eta(path)
    path.write_text("{not json")
    with pytest.raises(EtaError, match="not JSON"):
        load_eta(path)
    path.write_text('{"eta": {"tools": 3}, "eta_version": "x"}')
    with pytest.raises(EtaError, match="invalid η at tools"):
        load_eta(path)
    with pytest.raises(EtaError, match="no such"):
        load_eta(tmp_path / "missing.json")


def test_compile_rejects_bad_inputs(lib, inputs):
    tools, _ = inputs
    with pytest.raises(EtaError, match="listed twice"):
        compile_eta([*tools, tools[0]], lib)
    with pytest.raises(EtaError, match="unknown tool"):
        compile_eta(tools, lib, [RoutingNote(id="x", text="t", requires_tools=["fly"])], strict=True)
    with pytest.raises(EtaError, match="used twice"):
        compile_eta(tools, lib, [RoutingNote(id="x", text="a"), RoutingNote(id="x", text="b")])


def test_filter_keeps_only_entries_whose_tools_and_resources_exist(eta):
    filt = GuidanceFilter(eta)
    cast = ["get_cast_status", "start_cast", "stop_cast"]
    ids = filt.note_ids(cast)
    assert "cast.one-at-a-time" in ids and "power.last" not in ids and "memory.reconcile" not in ids
    assert "cast.one-at-a-time" not in filt.note_ids(["start_cast"])  # stop/status unavailable
    assert "memory.reconcile" in filt.note_ids(cast, ["memory"])
    text = "\n".join(filt.guidance(cast, ["skills"]))
    assert "screen-cast:" in text and "note-before-power-off" not in text
    assert not any("Skills (load_skill)" in g for g in filt.guidance(cast))  # no skills configured


def test_filter_is_fast(eta, inputs):
    filt = GuidanceFilter(eta)
    names = [t.name for t in inputs[0]]
    t0 = time.perf_counter()
    for _ in range(200):
        filt.guidance(names, ["memory", "skills", "delegate"])
    assert (time.perf_counter() - t0) / 200 < 0.005


def test_session_kwargs(eta, lib, tmp_path):
    kw = session_kwargs(eta, ["get_cast_status", "start_cast", "stop_cast"], library=lib, memory=True)
    assert kw["eta_version"] == eta.version
    # the session's store: the same skills, bound to the session's tools
    assert kw["skills"].names() == lib.names() and kw["skills"].catalogue is not None
    assert any(getattr(g, "skill", "") == "screen-cast" for g in kw["gates"])
    assert any("memory_search" in g for g in kw["guidance"])
    folder = tmp_path / "lib"
    (folder / "solo").mkdir(parents=True)
    (folder / "solo" / "SKILL.md").write_text("---\nname: solo\ndescription: d\nversion: '1'\n---\nbody\n")
    with pytest.raises(EtaError, match="differs"):
        session_kwargs(eta, [], library=SkillLibrary.from_dir(folder))


async def test_trace_records_eta_version(eta, lib, tmp_path):
    from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
    from pocketpilot.harness import Session
    from pocketpilot.harness.planners import ScriptedPlanner
    from pocketpilot.tracing.trace import read_trace

    executor = SandboxExecutor(SandboxPhone(), ["settings"])
    kw = session_kwargs(eta, [t.name for t in executor.tools()], library=lib)
    planner = ScriptedPlanner([{"kind": "finish", "summary": "ok"}])
    session = Session(planner, executor, trace_dir=tmp_path, **kw)
    await session.run("nothing")
    loaded, _ = read_trace(session.trace_path)
    assert loaded.header.eta_version == eta.version
    assert "read get_settings first" in planner.requests[0].messages[0].content


def test_semantic_diff(eta):
    tools = dict(eta.tools)
    wifi = tools["set_wifi"]
    params = json.loads(json.dumps(wifi.parameters))
    params["properties"]["enabled"]["description"] = "On?"
    tools["set_wifi"] = wifi.model_copy(update={"parameters": params})
    del tools["power_off"]
    notes = [n for n in eta.notes if n.id != "power.last"] + [RoutingNote(id="new.one", text="Hello.")]
    other = eta.model_copy(update={"tools": tools, "notes": notes})
    changes = diff_eta(eta, other)
    summary = {(c.section, c.name, c.change, c.field) for c in changes}
    assert ("tool", "power_off", "removed", "") in summary
    assert ("tool", "set_wifi", "changed", "parameters.properties.enabled.description") in summary
    assert ("note", "power.last", "removed", "") in summary
    assert ("note", "new.one", "added", "") in summary
    text = render_diff(eta, other, changes)
    assert "- tool power_off" in text and "+ note new.one: 'Hello.'" in text
    assert "~ tool set_wifi: parameters.properties.enabled.description" in text
    assert diff_eta(eta, eta) == []


def test_apply_revision_rules(eta):
    rev = Revision(
        id="r1",
        base_version=eta.version,
        rationale="planner retried the converter",
        ops=[
            AddNote(note=RoutingNote(id="extra", text="Be brief.", requires_tools=["calculate"])),
            RemoveNote(note_id="power.last"),
            MapTool(tool="calculate", skill="health-data"),
        ],
    )
    new = apply_revision(eta, rev)
    assert new.version != eta.version and new.note("extra") and new.note("power.last") is None
    assert "health-data" in new.tools["calculate"].skills
    bad = [
        (rev.model_copy(update={"base_version": "0" * 16}), "current η"),
        (rev.model_copy(update={"ops": [RemoveNote(note_id="nope")]}), "no note"),
        (rev.model_copy(update={"ops": [AddNote(note=eta.notes[0])]}), "already exists"),
        (rev.model_copy(update={"ops": [AddNote(note=RoutingNote(id="z", text="t", requires_tools=["fly"]))]}), "unknown tool"),
        (rev.model_copy(update={"ops": [MapTool(tool="calculate", skill="nope")]}), "unknown skill"),
        (rev.model_copy(update={"ops": [MapTool(tool="start_cast", skill="screen-cast")]}), "changes nothing"),
    ]
    for candidate, message in bad:
        with pytest.raises(RevisionError, match=message):
            apply_revision(eta, candidate)


def test_revision_store_pending_then_approved(eta, tmp_path):
    path = save_eta(eta, tmp_path / "eta.json")
    store = RevisionStore(path)
    rev = Revision(id="r1", base_version=eta.version, rationale="x", ops=[RemoveNote(note_id="power.last")])
    store.propose(rev)
    assert [r.id for r in store.pending()] == ["r1"]
    assert load_eta(path) == eta  # nothing applied before approval
    with pytest.raises(RevisionError, match="already exists"):
        store.propose(rev)
    new = store.approve("r1", "alice")
    assert load_eta(path) == new and store.pending() == []
    assert load_eta(store.root / "history" / f"{eta.version}.json") == eta
    record = json.loads((store.root / "approved" / "r1.json").read_text())
    assert record["approved_by"] == "alice" and record["new_version"] == new.version
    with pytest.raises(RevisionError, match="current η"):  # stale base after approval
        store.propose(rev.model_copy(update={"id": "r2"}))


def test_cli_compile_show_diff(tmp_path):
    runner = CliRunner()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    res = runner.invoke(adapter, ["compile", "--out", str(a)])
    assert res.exit_code == 0, res.output
    version = res.output.split()[0]
    assert load_eta(a).version == version
    res = runner.invoke(adapter, ["show", str(a)])
    assert res.exit_code == 0 and "skill screen-cast" in res.output
    res = runner.invoke(adapter, ["diff", str(a), str(a)])
    assert res.exit_code == 0 and "0 change(s)" in res.output
    eta = load_eta(a)
    save_eta(eta.model_copy(update={"notes": eta.notes[1:]}), b)
    res = runner.invoke(adapter, ["diff", str(a), str(b)])
    assert res.exit_code == 1 and f"- note {eta.notes[0].id}" in res.output
    b.write_text("garbage")
    res = runner.invoke(adapter, ["diff", str(a), str(b)])
    assert res.exit_code == 2 and "not JSON" in res.output
    rev = tmp_path / "rev.json"
    revision = Revision(id="r1", base_version=version, rationale="x", ops=[RemoveNote(note_id="power.last")])
    rev.write_text(revision.model_dump_json())
    assert runner.invoke(adapter, ["propose", str(a), str(rev)]).exit_code == 0
    assert "r1" in runner.invoke(adapter, ["pending", str(a)]).output
    res = runner.invoke(adapter, ["approve", str(a), "r1", "--by", "bob"])
    assert res.exit_code == 0 and load_eta(a).note("power.last") is None


def test_tool_spec_input_is_not_mutated(inputs, lib):
    tools, apps = inputs
    before = [t.model_dump() for t in tools]
    compile_eta(tools, lib, apps=apps)
    assert [t.model_dump() for t in tools] == before
    assert isinstance(tools[0], ToolSpec)


def test_a_kit_compiles_against_another_worlds_tools_dropping_and_counting_what_does_not_apply(lib, inputs):
    """An app team's tools lack the sandbox's: the bundled skills and notes that need those are left out."""
    tools, _ = inputs
    theirs = [t for t in tools if t.name in {"set_wifi", "get_settings", "send_sms", "lookup_contact"}]
    note = RoutingNote(id="fly", text="t", requires_tools=["fly"])
    eta = compile_eta(theirs, lib, [note])
    assert eta.dropped["notes"] == ["fly"] and eta.notes == []
    assert eta.dropped["skills"] and not set(eta.dropped["skills"]) & set(eta.skills)
    for entry in eta.skills.values():  # what stays names only tools this world has
        assert set(entry.requires) | set(entry.exposes) <= {t.name for t in theirs}
    with pytest.raises(SkillError):
        compile_eta(theirs, lib, strict=True)
