"""η's delegation section: off unless written, hashed as before without it, diffed, stored and mapped by the kit."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pocketpilot.adapters import compile_eta, sandbox_tool_apps
from pocketpilot.adapters.delegation import SWITCHES, DelegationPlan, DelegationSettings
from pocketpilot.adapters.diff import diff_eta
from pocketpilot.adapters.eta import Eta, load_eta, save_eta
from pocketpilot.adapters.kit import session_kwargs
from pocketpilot.adapters.revision import RemoveNote, Revision, apply_revision

EMPTY_ETA_VERSION = "fc270c767ca50a8b"
"""``Eta().version`` before the section existed (commit ec44f40)."""


@pytest.fixture(scope="module")
def eta() -> Eta:
    tools, apps = sandbox_tool_apps()
    return compile_eta(tools, apps=apps)


def test_an_eta_without_the_section_hashes_as_before(eta):
    assert Eta().version == EMPTY_ETA_VERSION
    assert "delegation" not in eta.content()
    on = eta.model_copy(update={"delegation": DelegationSettings.all_on()})
    assert on.version != eta.version and on.content()["delegation"] == dict.fromkeys(SWITCHES, True)


def test_a_stored_eta_keeps_loading_under_its_version(eta, tmp_path):
    for settings in (None, DelegationSettings(app_tools=True)):
        draft = eta.model_copy(update={"delegation": settings})
        loaded = load_eta(save_eta(draft, tmp_path / "eta.json"))
        assert loaded.version == draft.version and loaded.delegation == settings


def test_every_switch_is_off_unless_written_and_unknown_keys_are_refused():
    assert not any(DelegationSettings().model_dump().values())
    assert DelegationSettings.model_validate({"carry_ids": True}).model_dump() == {
        **dict.fromkeys(SWITCHES, False), "carry_ids": True}
    with pytest.raises(ValidationError):
        DelegationSettings.model_validate({"app_tool": True})


def test_diff_and_revision_carry_the_section(eta):
    on = eta.model_copy(update={"delegation": DelegationSettings(guidance=True)})
    changes = [c for c in diff_eta(eta, on) if c.section == "delegation"]
    assert {(c.field, c.after) for c in changes if c.change == "changed"} == {("guidance", True)}
    assert any(c.change == "added" for c in changes)
    note = on.notes[0].id
    revised = apply_revision(on, Revision(id="r1", base_version=on.version, rationale="x",
                                          ops=[RemoveNote(note_id=note)]))
    assert revised.delegation == on.delegation


def test_the_kit_hands_the_section_to_the_session_only_when_written(eta):
    tools = list(eta.tools)
    request = "have a helper find the cafe"
    assert "handoff" not in session_kwargs(eta, tools, delegate=True, request=request)
    on = eta.model_copy(update={"delegation": DelegationSettings(app_tools=True, guidance=True)})
    plan = session_kwargs(on, tools, delegate=True, request=request)["handoff"]
    assert isinstance(plan, DelegationPlan)
    assert plan.settings == DelegationSettings(app_tools=True, guidance=True)
    assert plan.apps["search_places"] == eta.tools["search_places"].app
    # the child's guidance has no note about delegating (it cannot)
    parent = session_kwargs(on, tools, delegate=True, request=request)["guidance_for"](tools)
    child = plan.child_guidance(tools)
    assert any("delegate" in line for line in parent) and not any("delegate" in line for line in child)
