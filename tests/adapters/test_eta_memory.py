"""η's memory section: switches of recall, placement and the answer path, hashed, diffed and applied."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from pocketpilot.adapters import compile_eta, sandbox_tool_apps
from pocketpilot.adapters.diff import diff_eta
from pocketpilot.adapters.eta import VERSION_CHARS, Eta, canonical_json, load_eta
from pocketpilot.adapters.kit import session_kwargs
from pocketpilot.adapters.placement import MemorySettings
from pocketpilot.evaluation.task_episode import HarnessKit
from pocketpilot.harness import HarnessConfig, MemoryPlacement


@pytest.fixture(scope="module")
def eta():  # noqa: ANN201
    tools, apps = sandbox_tool_apps()
    return compile_eta(tools, apps=apps)


def test_no_memory_section_hashes_as_before_and_a_section_changes_the_version(eta):
    assert "memory" not in eta.content()
    legacy = eta.model_copy(update={"memory": MemorySettings.legacy()})
    assert legacy.content()["memory"]["answers"] is False
    assert legacy.version != eta.version
    fields = {c.field for c in diff_eta(eta, legacy) if c.section == "memory"}
    assert {"answers", "budget", "dated", "keep_search", "standing_wishes"} <= fields


def test_the_section_rejects_unknown_keys_and_bad_values():
    with pytest.raises(ValidationError):
        MemorySettings(recall_k=0)
    with pytest.raises(ValidationError):
        MemorySettings.model_validate({"budjet": 10})


def test_the_kit_maps_the_section_onto_the_session_config(eta):
    assert HarnessKit(eta=eta).configure(HarnessConfig()) == HarnessConfig()  # no section: the defaults
    cfg = HarnessKit(eta=eta.model_copy(update={"memory": MemorySettings(recall_k=3, budget=0, answers=False)})) \
        .configure(HarnessConfig(max_steps=4))
    assert cfg.max_steps == 4 and cfg.answers is False
    assert cfg.memory == MemoryPlacement(k=3, budget=0, as_messages=False)  # a written-out section: as it says


def test_keep_search_keeps_memory_search_offered_after_a_recall(eta):
    tools, _ = sandbox_tool_apps()
    names = [t.name for t in tools]
    kept = session_kwargs(eta, names, memory=True, request="What did I say about the trip?", recalled=["a memory"])
    assert "memory_search" in kept["actions"]
    assert any("memory_search with other words" in g for g in kept["guidance_for"](names))
    off = eta.model_copy(update={"memory": MemorySettings(keep_search=False)})
    dropped = session_kwargs(off, names, memory=True, request="What did I say about the trip?", recalled=["a memory"])
    assert "memory_search" not in dropped["actions"]
    assert not any("memory_search with other words" in g for g in dropped["guidance_for"](names))


def test_the_recall_note_follows_the_answer_switch(eta):
    tools, _ = sandbox_tool_apps()
    names = [t.name for t in tools]

    def notes(settings: MemorySettings) -> str:
        kw = session_kwargs(eta.model_copy(update={"memory": settings}), names, memory=True,
                            request="What did I say about the trip?", recalled=["a memory"])
        return "\n".join(kw["guidance_for"](names))

    assert "A question about the past is answered from them" in notes(MemorySettings())
    legacy = notes(MemorySettings.legacy())
    assert "A question about the past" not in legacy and "ask_user" in legacy


# ---------------------------------------------------------------- the defaults, and a written-out section

THREE = ("whole_closes_search", "as_messages", "drop_recall_note")
PRE_FLIP_KEYS = {"recall", "recall_k", "budget", "dated", "standing_wishes", "answers", "keep_search"}
"""The keys a stored section held while the three (and ``newest_last``) were off by default."""
REQUEST = "What did I say about the trip?"


def _whole_recall(eta: Eta) -> tuple[list[str], str]:
    """The actions and guidance of a request whose owner's whole history was recalled."""
    names = [t.name for t in sandbox_tool_apps()[0]]
    kw = session_kwargs(eta, names, memory=True, request=REQUEST, recalled=["a memory"], recalled_whole=True)
    return kw["actions"], "\n".join(kw["guidance_for"](names))


def test_an_eta_without_a_memory_section_runs_the_three_switches_on(eta):
    assert eta.memory is None
    assert MemorySettings.defaults() == MemorySettings(**dict.fromkeys(THREE, True))
    actions, notes = _whole_recall(eta)
    assert "memory_search" not in actions and "memory_search with other words" not in notes  # whole_closes_search
    assert "The memories shown with the request" not in notes and "check its live state" not in notes  # no note
    assert HarnessKit(eta=eta).configure(HarnessConfig()).memory.as_messages is True  # one message per memory
    # a retrieval may have missed: the search stays offered (keep_search), still without the recall note
    names = [t.name for t in sandbox_tool_apps()[0]]
    kw = session_kwargs(eta, names, memory=True, request=REQUEST, recalled=["a memory"], recalled_whole=False)
    assert "memory_search" in kw["actions"]
    assert "The memories shown with the request" not in "\n".join(kw["guidance_for"](names))
    # the diff of a section against none compares with what none runs
    fields = {c.field for c in diff_eta(eta, eta.model_copy(update={"memory": MemorySettings()})) if c.section == "memory"}
    assert set(THREE) <= fields


def test_a_stored_section_that_leaves_the_switches_out_keeps_them_off_and_its_version(eta, tmp_path: Path):
    """η files written while the three were off by default left their keys out and hashed that
    content: such a file loads under its recorded version and runs them off."""
    content = eta.content()
    content["memory"] = {"recall": True, "recall_k": 3, "budget": 1000, "dated": True, "standing_wishes": True,
                         "answers": True, "keep_search": True}  # as such a file holds it
    version = hashlib.sha256(canonical_json(content).encode()).hexdigest()[:VERSION_CHARS]
    path = tmp_path / "eta.json"
    path.write_text(json.dumps({"eta_version": version, "eta": content}))
    stored = load_eta(path)  # verifies the content hashes to the recorded version
    assert stored.version == version and set(stored.content()["memory"]) == PRE_FLIP_KEYS
    assert stored.memory == MemorySettings(recall_k=3) and not any(getattr(stored.memory, k) for k in THREE)
    actions, notes = _whole_recall(stored)
    assert "memory_search" in actions and "memory_search with other words" in notes
    assert "The memories shown with the request are dated" in notes and "check its live state" in notes
    assert HarnessKit(eta=stored).configure(HarnessConfig()).memory == MemoryPlacement(k=3, as_messages=False)
    # the defaults written out are another section, hashed with the three keys
    written = eta.model_copy(update={"memory": MemorySettings.defaults()})
    assert written.version not in (stored.version, eta.version)
    assert {k: written.content()["memory"][k] for k in THREE} == dict.fromkeys(THREE, True)
