"""η's memory section: switches of recall, placement and the answer path, hashed, diffed and applied."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pocketpilot.adapters import compile_eta, sandbox_tool_apps
from pocketpilot.adapters.diff import diff_eta
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
    assert cfg.memory == MemoryPlacement(k=3, budget=0)


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
