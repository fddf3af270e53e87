from __future__ import annotations

import json
import re
import time

import pytest

from pocketpilot.adapters import Eta, ToolEntry, apply_revision, diff_eta, render_diff
from pocketpilot.adapters.errors import RevisionError
from pocketpilot.adapters.experience import (
    SLOT_KEY,
    ExperienceConfig,
    entry_texts,
    forget,
    merge,
    render_examples,
    render_step_hint,
    retrieve,
    step_cases_for,
    usable_for,
)
from pocketpilot.adapters.revision import AddExperience, EvictExperience, Revision, SetExperienceConfig, SetToolText
from pocketpilot.contracts import CriterionResult, RetrievedMemory, ToolResult, ToolSpec, Verdict
from pocketpilot.trainer_bridge.distil import distil, distil_episode
from pocketpilot.trainer_bridge.export_synthetic import make_episode

PASS = Verdict(success=True, criteria=[CriterionResult(name="c", passed=True)])
FAIL = Verdict(success=False, criteria=[CriterionResult(name="c", passed=False)])

SPECS = [
    ToolSpec(name="find_contact", description="Find a contact by name", read_only=True, effect="read",
             parameters={"type": "object", "properties": {"query": {"type": "string"}}}),
    ToolSpec(name="send_message", description="Send a text", effect="send",
             parameters={"type": "object", "properties": {"contact_id": {"type": "string"},
                                                          "body": {"type": "string"},
                                                          "priority": {"enum": ["low", "high"]}}}),
]


def message_episode(name: str, body: str, cid: str, *, eid: str = "ep1", verdict: Verdict = PASS, recover: bool = False):
    steps = []
    if recover:
        steps.append({"calls": [("send_message", {"contact_id": name, "body": body})],
                      "results": [ToolResult.failure("not_found", "no contact with that id")]})
    steps += [
        {"calls": [("find_contact", {"query": name})],
         "results": [ToolResult.success({"items": [{"id": cid, "name": name}]})]},
        {"calls": [("send_message", {"contact_id": cid, "body": body, "priority": "high"})],
         "results": [ToolResult.success({"sent": True})]},
    ]
    return make_episode(steps, request=f"Text {name} saying {body}", verdict=verdict, tools=SPECS, episode_id=eid)


def test_a_verified_run_becomes_a_slotted_workflow() -> None:
    entry = distil_episode(message_episode("Dana Ruiz", "running late", "c-417"))
    assert entry is not None
    assert entry.request == "Text <query> saying <body>"
    find, send = entry.calls
    assert find.check and not send.check  # from the declared read_only, not the name
    assert find.arguments == {"query": {SLOT_KEY: "query"}}
    assert send.arguments == {"contact_id": {SLOT_KEY: "contact_id"}, "body": {SLOT_KEY: "body"}, "priority": "high"}
    slots = {s.name: s for s in entry.slots}
    assert slots["contact_id"].source == "result" and slots["contact_id"].call == 0
    assert slots["contact_id"].path == "items.0.id"
    assert entry.provenance == ["ep1"]
    text = json.dumps(entry.model_dump(mode="json"))
    for value in ("Dana", "running late", "c-417"):
        assert value not in text


def test_only_passing_or_approved_runs_are_distilled() -> None:
    failed = message_episode("Dana", "hi", "c1", eid="bad", verdict=FAIL)
    assert distil([failed]) == []
    assert [e.provenance for e in distil([failed], approved=["bad"])] == [["bad"]]


def test_near_duplicates_merge_and_union_provenance() -> None:
    a = message_episode("Dana", "running late", "c1", eid="a")
    b = message_episode("Omar", "see you at noon", "c2", eid="b")
    entries = distil([a, b])
    assert len(entries) == 1 and entries[0].provenance == ["a", "b"]
    again = merge(entries, distil([message_episode("Li", "ok", "c3", eid="c")]))
    assert len(again) == 1 and again[0].provenance == ["a", "b", "c"]


def test_recovery_and_step_cases_are_kept() -> None:
    entry = distil_episode(message_episode("Dana", "late", "c9", recover=True))
    assert entry is not None
    assert [(r.tool, r.code) for r in entry.recoveries] == [("send_message", "not_found")]
    # step cases reuse the workflow's forms: no slot is read from a result that came later
    assert sorted(s.name for s in entry.slots) == ["body", "contact_id", "query"]
    cases = step_cases_for([entry], "send_message", "not_found")
    assert cases and cases[0].action[0].tool == "find_contact"
    hint = render_step_hint(cases[0])
    assert "<query>" in hint and "Dana" not in hint


def test_secrets_are_redacted_and_owner_literals_make_an_entry_private() -> None:
    ep = make_episode([{"calls": [("send_message", {"contact_id": "c1", "body": "my PIN is 4921"})],
                        "results": [ToolResult.success({"sent": True})]}],
                      request="Send the door code to c1", verdict=PASS, tools=SPECS, episode_id="p")
    [entry] = distil([ep], owner="alice")
    # a value the run composed is a slot (the PIN as a word of its own: the entry's hex id and
    # timestamp may hold those digits by chance)
    assert not re.search(r"(?<![0-9a-f.])4921(?![0-9a-f])", json.dumps(entry.model_dump(mode="json")))
    assert entry.calls[0].arguments["body"] == {SLOT_KEY: "body"} and entry.shareable
    personal = make_episode([{"calls": [("send_message", {"contact_id": "c1", "body": "hi"})],
                              "results": [ToolResult.success({"sent": True})]}],
                            request="Say hi to c1 and cc ana.lopez@example.com", verdict=PASS, tools=SPECS, episode_id="p2")
    [private] = distil([personal], owner="alice")
    assert not private.shareable
    assert usable_for(private, "alice") and not usable_for(private, "bob")
    assert retrieve([private], "say hi to c2", owner="bob") == [] and retrieve([private], "say hi to c2", owner="alice")
    [bench] = distil([message_episode("Dana", "late", "c1")])
    assert bench.owner is None and usable_for(bench, "bob")
    [slotted] = distil([message_episode("Dana", "late", "c1", eid="q")], owner="alice")
    assert slotted.shareable and usable_for(slotted, "bob")


def test_retrieval_picks_related_entries_only_and_respects_exposure() -> None:
    msg = distil([message_episode("Dana", "late", "c1")])
    other = distil([make_episode([{"calls": [("set_alarm", {"time": "07:00"})], "results": [ToolResult.success()]}],
                                 request="Wake me at 07:00 tomorrow", verdict=PASS, episode_id="z")])
    lib = merge(msg, other)
    assert [e.tools for e in retrieve(lib, "text Omar saying hello")] == [["find_contact", "send_message"]]
    assert retrieve(lib, "text Omar saying hello", tools=["send_message"]) == []
    assert retrieve(lib, "quantum chromodynamics") == []


def test_rendering_shows_slots_within_the_budget_and_fast() -> None:
    lib = distil([message_episode("Dana", "running late", "c1")])
    text = render_examples(lib, budget_tokens=800)
    assert "<query>" in text and "Dana" not in text and "send_message(" in text
    assert render_examples(lib, budget_tokens=50) == ""
    many = [e.model_copy(update={"id": f"exp-{i:06d}", "request": f"Text <query> about topic{i}"})
            for i in range(200) for e in lib]
    t0 = time.perf_counter()
    for _ in range(10):
        picked = retrieve(many, "text Omar about topic7", k=2)
        render_examples(picked)
    assert (time.perf_counter() - t0) / 10 < 0.030


def _eta() -> Eta:
    return Eta(tools={s.name: ToolEntry(description=s.description, parameters=s.parameters) for s in SPECS})


def test_entries_are_eta_data_versioned_diffed_and_evicted() -> None:
    eta = _eta()
    lib = distil([message_episode("Dana", "late", "c1")])
    assert "experience" not in eta.content()  # an η without experience hashes as before
    new = apply_revision(eta, Revision(id="r1", base_version=eta.version, rationale="learned",
                                       ops=[AddExperience(entries=lib)]))
    assert new.version != eta.version and new.experience == lib
    changes = diff_eta(eta, new)
    assert [(c.section, c.change) for c in changes] == [("experience", "added")]
    assert "Text <query> saying <body>" in render_diff(eta, new)
    evicted = apply_revision(new, Revision(id="r2", base_version=new.version, rationale="harmful",
                                           ops=[EvictExperience(entry_id=lib[0].id)]))
    assert evicted.version == eta.version
    with pytest.raises(RevisionError):
        apply_revision(evicted, Revision(id="r3", base_version=evicted.version, rationale="x",
                                         ops=[EvictExperience(entry_id=lib[0].id)]))
    off = apply_revision(new, Revision(id="r4", base_version=new.version, rationale="off",
                                       ops=[SetExperienceConfig(config=ExperienceConfig(enabled=False))]))
    assert off.version != new.version and not off.experience_config.enabled


def test_experience_naming_an_unknown_tool_is_refused() -> None:
    eta = _eta()
    alien = distil([make_episode([{"calls": [("set_alarm", {"time": "7"})], "results": [ToolResult.success()]}],
                                 request="alarm at 7", verdict=PASS, episode_id="z")])
    with pytest.raises(RevisionError, match="unknown tool"):
        apply_revision(eta, Revision(id="r", base_version=eta.version, rationale="x", ops=[AddExperience(entries=alien)]))


def test_tool_text_is_eta_data() -> None:
    eta = _eta()
    new = apply_revision(eta, Revision(id="t", base_version=eta.version, rationale="x",
                                       ops=[SetToolText(tool="send_message", description="Send a text. priority: low|high")]))
    assert new.tools["send_message"].revised_description == "Send a text. priority: low|high"
    assert any(c.field == "revised_description" for c in diff_eta(eta, new))
    assert "revised_description" not in json.dumps(eta.content())


def test_a_value_from_memory_is_a_slot_and_forget_drops_the_entry() -> None:
    ep = make_episode([
        {"action": __import__("pocketpilot.contracts", fromlist=["MemorySearch"]).MemorySearch(query="sister"),
         "results": [], "retrieved": [RetrievedMemory(id="m1", tier="user", content="my sister is Inga Falk", score=1.0)]},
        {"calls": [("find_contact", {"query": "Inga Falk"})], "results": [ToolResult.success({"items": [{"id": "c5"}]})]},
    ], request="Look up my sister", verdict=PASS, tools=SPECS, episode_id="m")
    [entry] = distil([ep])
    assert entry.memory_ids == ["m1"]
    assert {s.source for s in entry.slots} == {"memory"}
    assert not any("Inga" in t for t in entry_texts(entry))

    class Ledger:
        ids = {"m1": time.time()}

        def __bool__(self) -> bool:
            return True

        def quotes_any(self, texts, made_at=None) -> bool:
            return False

    kept, dropped = forget([entry], Ledger())
    assert kept == [] and dropped == [entry.id]


def test_values_are_lifted_as_whole_words_and_whole_floats() -> None:
    spec = ToolSpec(name="set_level", description="Set a level",
                    parameters={"type": "object", "properties": {"mode": {"type": "string"}, "level": {"type": "number"}}})
    ep = make_episode([{"calls": [("set_level", {"mode": "on", "level": 5.0})], "results": [ToolResult.success()]}],
                      request="Convert the level to 5 and keep it going", verdict=PASS, tools=[spec], episode_id="w")
    [entry] = distil([ep])
    # "on" is only inside "Convert"/"going": not a request value; 5.0 is the request's "5"
    assert entry.calls[0].arguments == {"mode": {SLOT_KEY: "mode"}, "level": {SLOT_KEY: "level"}}
    assert {s.name: s.source for s in entry.slots} == {"mode": "derived", "level": "request"}
    assert entry.request == "Convert the level to <level> and keep it going"


class WordsEmbedder:
    """A fake embedder that maps synonyms to the same axis (the hybrid path without a model)."""

    name, dim = "fake", 3
    AXES = {"text": 0, "message": 0, "sms": 0, "alarm": 1, "wake": 1, "weather": 2}

    def embed(self, texts):
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                if w in self.AXES:
                    out[i, self.AXES[w]] += 1
            n = np.linalg.norm(out[i])
            out[i] = out[i] / n if n else out[i]
        return out


def test_hybrid_retrieval_finds_a_paraphrase_bm25_misses() -> None:
    msg = distil([message_episode("Dana", "late", "c1")])
    assert retrieve(msg, "sms Omar") == []  # no shared word
    assert [e.id for e in retrieve(msg, "sms Omar", embedder=WordsEmbedder())] == [msg[0].id]


def test_any_revision_keeps_the_sections_it_does_not_touch() -> None:
    from pocketpilot.adapters import RoutingNote
    from pocketpilot.adapters.revision import AddNote

    eta = _eta().model_copy(update={"experience": distil([message_episode("Dana", "late", "c1")]),
                                    "experience_config": ExperienceConfig(k=3)})
    new = apply_revision(eta, Revision(id="n", base_version=eta.version, rationale="x",
                                       ops=[AddNote(note=RoutingNote(id="n1", text="Be brief."))]))
    assert new.experience == eta.experience and new.experience_config.k == 3
