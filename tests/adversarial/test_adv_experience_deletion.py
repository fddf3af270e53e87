"""A deleted memory never survives inside an experience entry: attacked the way an attacker would look.

The owner's memories reach distilled workflows two ways: a run was shown the memory (its id
is in the trace) and learned from it, or the request itself repeated the memory's words.
After the memories are deleted and the η store is told (``RevisionStore.forget``), the words
are looked for everywhere an entry could keep them: the current η file, every η in its
history, pending and approved revisions, the prompt a new session renders, and the trace
header that session writes.
"""

from __future__ import annotations

import time
from pathlib import Path

from _adv_memory_support import POLICY, admin, svc

from pocketpilot.adapters import Eta, RevisionStore, ToolEntry, load_eta, save_eta, session_kwargs
from pocketpilot.adapters.revision import AddExperience, Revision
from pocketpilot.contracts import CriterionResult, MemorySearch, RetrievedMemory, ToolResult, ToolSpec, Verdict
from pocketpilot.executor import ToolRegistry, tool
from pocketpilot.harness import Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.memory import MemoryCandidate, Provenance, SqliteMemory
from pocketpilot.trainer_bridge.distil import distil
from pocketpilot.trainer_bridge.export_synthetic import make_episode

SECRET_1 = "Bartholomew Quince keeps the spare key under the blue heron statue"
SECRET_2 = "Aunt Philippa's boat is moored at pier nineteen behind the old cannery"
WORDS = ("heron", "Bartholomew", "Philippa", "cannery", "nineteen")
PASS = Verdict(success=True, criteria=[CriterionResult(name="c", passed=True)])


class Phone:
    @tool
    def send_message(self, to: str, body: str) -> dict:
        """Send a text message."""
        return {"sent": True}

    @tool
    def share_note(self, text: str) -> dict:
        """Share a note."""
        return {"shared": True}


def specs() -> list[ToolSpec]:
    return ToolRegistry.from_object(Phone()).tools()


def episodes(m1: str) -> list:
    s = specs()
    shown = make_episode([  # the run was shown memory m1 and copied its words into the body
        {"action": MemorySearch(query="spare key"), "results": [],
         "retrieved": [RetrievedMemory(id=m1, tier="episodic", content=SECRET_1, score=1.0)]},
        {"calls": [("send_message", {"to": "Bartholomew Quince", "body": "The spare key is under the blue heron statue"})],
         "results": [ToolResult.success({"sent": True})]},
    ], request="Tell my trainer where the spare key is", verdict=PASS, tools=s, episode_id="e1")
    copied = make_episode([  # no memory step in the trace: the request repeated the memory's words whole
        {"calls": [("share_note", {"text": "see you there"})], "results": [ToolResult.success({"shared": True})]},
    ], request=f"{SECRET_2}. Share a note saying see you there", verdict=PASS, tools=s, episode_id="e2")
    return [shown, copied]


def files_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in root.rglob("*.json"))


async def test_deleted_memories_leave_no_trace_in_experience(tmp_path: Path) -> None:
    store = SqliteMemory(tmp_path / "mem.db", POLICY)
    m1 = store.write(svc("alice"), MemoryCandidate(content=SECRET_1, provenance=Provenance(source="user_statement"))).id
    m2 = store.write(svc("alice"), MemoryCandidate(content=SECRET_2, provenance=Provenance(source="user_statement"))).id
    made = time.time()
    entries = distil(episodes(m1), owner="alice", at=made)
    assert len(entries) == 2

    eta_path = tmp_path / "eta" / "eta.json"
    base = Eta(tools={s.name: ToolEntry(description=s.description, parameters=s.parameters) for s in specs()})
    save_eta(base, eta_path)
    revisions = RevisionStore(eta_path)
    revisions.propose(Revision(id="learn", base_version=base.version, rationale="dev", ops=[AddExperience(entries=entries)]))
    learned = revisions.approve("learn", "reviewer")
    revisions.propose(Revision(id="more", base_version=learned.version, rationale="dev",
                               ops=[AddExperience(entries=[entries[1].model_copy(update={"provenance": ["e3"]})])]))
    # argument values are slots (the memory's words never enter as values); the request kept its words
    stored = files_text(eta_path.parent)
    assert "heron" not in stored and "Philippa" in stored and entries[0].memory_ids == [m1]

    assert store.delete(admin("alice"), [m1, m2]) == 2
    ledger = store.deletion_ledger(admin())
    dropped = revisions.forget(ledger)
    assert sorted(dropped) == sorted(e.id for e in entries)

    stored = files_text(eta_path.parent)
    for word in WORDS:
        assert word.casefold() not in stored.casefold(), word
    current = load_eta(eta_path)  # still a valid η whose hash matches
    assert current.experience == [] and current.version == base.version
    assert revisions.pending() == []  # the pending revision had nothing else to add

    registry = ToolRegistry.from_object(Phone())
    planner = ScriptedPlanner([{"kind": "finish", "summary": "done"}])
    request = "Tell my trainer where the spare key is"
    session = Session(planner, registry, trace_dir=tmp_path / "traces",
                      **session_kwargs(current, registry.tools(), request=request, owner="alice"))
    await session.run(request)
    prompt = "\n".join(m.content for m in planner.requests[0].messages)
    trace = session.trace_path.read_text(encoding="utf-8")
    for word in WORDS:
        assert word.casefold() not in prompt.casefold() and word.casefold() not in trace.casefold(), word


def test_forget_keeps_what_no_deletion_touches(tmp_path: Path) -> None:
    store = SqliteMemory(tmp_path / "mem.db", POLICY)
    m1 = store.write(svc("alice"), MemoryCandidate(content=SECRET_1, provenance=Provenance(source="user_statement"))).id
    other = store.write(svc("alice"), MemoryCandidate(content="I like green tea in the morning",
                                                      provenance=Provenance(source="user_statement"))).id
    entries = distil(episodes(m1), owner="alice", at=time.time())
    store.delete(admin("alice"), [other])
    from pocketpilot.adapters.experience import forget

    kept, dropped = forget(entries, store.deletion_ledger(admin()))
    assert dropped == [] and kept == entries


def test_the_cli_forgets_too(tmp_path: Path) -> None:
    from _adv_memory_support import ADMIN, SERVICE
    from click.testing import CliRunner

    from pocketpilot.cli.main import cli

    db = tmp_path / "mem.db"
    with SqliteMemory(db, POLICY) as store:
        m1 = store.write(svc("alice"), MemoryCandidate(content=SECRET_1, provenance=Provenance(source="user_statement"))).id
        entries = distil(episodes(m1), owner="alice", at=time.time())
        store.delete(admin("alice"), [m1])
    base = Eta(tools={s.name: ToolEntry(description=s.description, parameters=s.parameters) for s in specs()},
               experience=entries)
    path = save_eta(base, tmp_path / "eta.json")
    res = CliRunner().invoke(cli, ["adapter", "forget", str(path), "--memory", str(db), "--admin-token", ADMIN,
                                   "--service-token", SERVICE])
    assert res.exit_code == 0, res.output
    assert "forgot 1 experience entry" in res.output
    assert len(load_eta(path).experience) == 1 and entries[0].id not in path.read_text(encoding="utf-8")
