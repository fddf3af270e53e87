"""Deletion forensics: after a delete, the text is in no byte of the store and no export.

A memory is used the way a real session uses one (recalled, restated with memory_write,
sent in a tool call, summarised by the captured episode), traced, and deleted with the CLI.
Then the attacker looks everywhere: the raw bytes of the closed file and of any -wal/-shm
left beside it, every retrieval mode, ``memory export``, ``export sft``, ``export rl`` and
``release create`` — including a trace that quotes the memory without naming its id.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from _adv_memory_support import ADMIN, POLICY, SERVICE, embedder, svc
from click.testing import CliRunner

from pocketpilot.cli.export import export as export_cli
from pocketpilot.cli.export import release as release_cli
from pocketpilot.cli.memory import memory as memory_cli
from pocketpilot.contracts import CriterionResult, Episode, Finish, MemorySearch, RetrievedMemory, ToolResult, Verdict
from pocketpilot.memory import BoundMemory, MemoryCandidate, Provenance, SqliteMemory
from pocketpilot.tasks import load_suite
from pocketpilot.trainer_bridge.export_synthetic import make_episode

FACT = "Aunt Rosalind keeps the xylophonequartz heirloom in the attic behind the blue trunk"
MARKERS = ("xylophonequartz", "Rosalind", "heirloom")
ENV = {"POCKETPILOT_SERVICE_TOKEN": SERVICE, "POCKETPILOT_ADMIN_TOKEN": ADMIN}
OK = Verdict(success=True, criteria=[CriterionResult(name="a", passed=True)])
WIFI = {"calls": [("set_wifi", {"enabled": False})], "results": [ToolResult.success({"wifi": False})]}


def _leaks(blob: bytes | str) -> list[str]:
    data = blob.encode() if isinstance(blob, str) else blob
    return [m for m in MARKERS for form in {m, m.lower()} if form.encode() in data or form.encode("utf-16-le") in data]


def _write_trace(path: Path, episode: Episode) -> None:
    lines = [{"type": "header", "schema": 1, "header": episode.header.model_dump(mode="json")}]
    lines += [{"type": "step", "step": s.model_dump(mode="json")} for s in episode.steps]
    lines.append({"type": "end", "stop_reason": "finish", "verdict": episode.verdict.model_dump(mode="json")})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")


def _use_and_trace(store: SqliteMemory, fact: str, traces: Path, task) -> None:  # type: ignore[no-untyped-def]
    session = BoundMemory(store, svc("alice"), "s1")
    mem = RetrievedMemory(id=fact, tier="user", content=FACT, score=1.0, provenance={"owner": "alice"})
    recall = {"action": MemorySearch(query="where is it kept"), "retrieved": [mem],
              "results": [ToolResult.success({"memories": [{"id": fact, "content": FACT}]})]}

    async def run() -> None:
        assert [h.id for h in await session.search("where does aunt keep the heirloom")] == [fact]
        await session.write(f"User said: {FACT}", tier="episodic", category=None, provenance={"step": 1})
        used = make_episode([recall, {"calls": [("send_message", {"to": "Sam", "text": FACT})],
                                      "results": [ToolResult.success({"sent": True})]},
                             {"action": Finish(summary="Sent."), "results": []}])
        await session.capture_episode(used.model_copy(update={"stop_detail": f"told Sam: {FACT}"}))

    asyncio.run(run())
    fin = {"action": Finish(summary="Done."), "results": []}
    quoting = {"action": Finish(summary=f"Reminder: {FACT.lower()}."), "results": []}  # no id anywhere
    for name, steps in (("retrieved", [recall, WIFI, fin]), ("quoted", [WIFI, quoting]), ("clean", [WIFI, fin])):
        _write_trace(traces / f"{name}.jsonl", make_episode(steps, task_id=task.id, request=task.goal, verdict=OK,
                                                            episode_id=name))


def _raw_files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.name.startswith("mem.db")}


@pytest.fixture(scope="module")
def deleted(tmp_path_factory):
    emb = embedder(tmp_path_factory)
    root = tmp_path_factory.mktemp("forensics")
    (root / "traces").mkdir()
    path = root / "mem.db"
    task = next(t for t in load_suite() if t.split == "dev")
    with SqliteMemory(path, POLICY, embedder=emb) as store:
        for who in ("alice", "bob"):
            store.write_many(svc(who), [MemoryCandidate(content=f"{who} note {i}: charged the phone, walked the dog",
                                                        provenance=Provenance(source="episode")) for i in range(300)])
        fact = store.write(svc("alice"), MemoryCandidate(content=FACT, tier="user",
                                                         provenance=Provenance(source="user_statement"))).id
        _use_and_trace(store, fact, root / "traces", task)
        assert sum(FACT in i.content for i in store.list_items(svc("alice"), limit=10_000)) == 4
    assert _leaks(path.read_bytes() + b"".join(_raw_files(root).values()))  # the attacker's probe works
    res = CliRunner().invoke(memory_cli, ["delete", str(path), fact, "--yes", "--keyword-only"], env=ENV)
    assert res.exit_code == 0 and "deleted 4" in res.output, res.output
    return root, path, emb


def test_closed_file_and_its_wal_hold_no_byte_of_the_deleted_text(deleted):
    root, path, _ = deleted
    files = _raw_files(root)
    assert "mem.db" in files
    for name, data in files.items():
        assert _leaks(data) == [], name


def test_no_retrieval_mode_finds_it(deleted):
    root, path, emb = deleted
    with SqliteMemory(path, POLICY, embedder=emb) as store:
        for mode in ("hybrid", "keyword", "vector"):
            for query in (FACT, "xylophonequartz", "where does aunt Rosalind keep the heirloom", "User said"):
                hits = store.search(svc("alice"), query, k=50, mode=mode)
                assert not any(_leaks(h.item.content) for h in hits), (mode, query)
        assert len(store.list_items(svc("alice"), limit=10_000)) == 300
    for name, data in _raw_files(root).items():  # reopening resurrected nothing
        assert _leaks(data) == [], name


def test_no_export_path_returns_it(deleted):
    root, path, _ = deleted
    run = CliRunner().invoke
    res = run(memory_cli, ["export", str(path), "--user", "alice", "--keyword-only"], env=ENV)
    assert res.exit_code == 0 and len(res.stdout.splitlines()) == 300 and _leaks(res.stdout) == []
    traces = str(root / "traces")
    res = run(export_cli, ["sft", traces, "-o", str(root / "sft.jsonl"), "--memory-db", str(path)], env=ENV)
    assert res.exit_code == 0 and "2 SFT record(s)" in res.stdout, res.output
    assert "1 episode(s) left out" in res.stderr  # the trace that quoted it without an id
    assert _leaks((root / "sft.jsonl").read_text()) == []
    res = run(export_cli, ["rl", traces, "-o", str(root / "rl.jsonl"), "--memory-db", str(path), "--min-size", "1"],
              env=ENV)
    assert res.exit_code == 0 and "1 RL group(s)" in res.stdout, res.output
    rl = json.loads((root / "rl.jsonl").read_text())
    assert rl["size"] == 2 and _leaks(json.dumps(rl)) == []
    res = run(export_cli, ["curate", traces, "--store", str(root / "cur.sqlite")], env=ENV)
    assert res.exit_code == 0, res.output
    res = run(release_cli, ["create", str(root / "cur.sqlite"), str(root / "rel"), "v0", "--no-parquet"], env=ENV)
    assert res.exit_code == 2 and "--memory-db" in res.output  # no silent release without the ledger
    res = run(release_cli, ["create", str(root / "cur.sqlite"), str(root / "rel"), "v1", "--memory-db", str(path),
                            "--no-parquet"], env=ENV)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["counts"]["episodes"] >= 1
    for shipped in (root / "rel" / "v1").iterdir():
        assert _leaks(shipped.read_bytes()) == [], shipped.name
