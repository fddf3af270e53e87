from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketpilot.cli.export import export as export_cli
from pocketpilot.cli.export import release as release_cli
from pocketpilot.contracts import CriterionResult, Finish, MemorySearch, RetrievedMemory, ToolResult, Verdict
from pocketpilot.memory import AccessPolicy, Caller, MemoryCandidate, Provenance, SqliteMemory
from pocketpilot.tasks import load_suite
from pocketpilot.trainer_bridge.curation import curate_one
from pocketpilot.trainer_bridge.export_synthetic import make_episode
from pocketpilot.trainer_bridge.release import ReleaseError, build_release, verify_release
from pocketpilot.trainer_bridge.review import CurationStore

OK = Verdict(success=True, criteria=[CriterionResult(name="a", passed=True)])
BAD = Verdict(success=False, criteria=[CriterionResult(name="a", passed=False)])
WIFI = {"calls": [("set_wifi", {"enabled": False})], "results": [ToolResult.success({"wifi": False})]}
FIN = {"action": Finish(summary="Done."), "results": []}
SUITE = load_suite()
DEV = [t for t in SUITE if t.split == "dev"]
EVOLVE = next(t for t in SUITE if t.split == "evolve")
TEST = next(t for t in SUITE if t.split == "test")


def mem_step(mem_id: str, content: str, owner: str = "alice"):
    m = RetrievedMemory(id=mem_id, tier="user", content=content, score=1.0, provenance={"owner": owner})
    data = {"memories": [{"id": mem_id, "tier": "user", "content": content}]}
    return {"action": MemorySearch(query="prefs"), "results": [ToolResult.success(data)], "retrieved": [m]}


@pytest.fixture
def store(tmp_path: Path):
    s = CurationStore(tmp_path / "cur.sqlite")
    recs = []
    for i, task in enumerate(DEV[:3]):
        for j, verdict in enumerate((OK, BAD)):
            recs.append(make_episode([WIFI, FIN], task_id=task.id, request=task.goal, verdict=verdict, episode_id=f"d{i}{j}"))
    recs.append(make_episode([WIFI, FIN], task_id=EVOLVE.id, request=EVOLVE.goal, verdict=OK, episode_id="evolve"))
    recs.append(make_episode([WIFI, FIN], task_id=None, request=TEST.goal, verdict=OK, episode_id="testgoal"))
    recs.append(make_episode([mem_step("mem-gone", "likes jazz"), WIFI, FIN], task_id=DEV[3].id, request=DEV[3].goal,
                             verdict=OK, episode_id="scrub"))
    recs.append(make_episode([mem_step("mem-gone2", "hates techno"), WIFI,
                              {"action": Finish(summary="You hates techno, so wifi is off."), "results": []}],
                             task_id=None, request="quote", verdict=OK, episode_id="quote"))
    recs.append(make_episode([WIFI, FIN], task_id=None, request="bob's", verdict=OK, episode_id="bob",
                             harness_config={"user_id": "bob"}))
    s.add([curate_one(e, task=next((t for t in SUITE if t.id == e.header.task_id), None)) for e in recs])
    yield s
    s.close()


def test_release_excludes_held_out_and_deleted_data(store: CurationStore, tmp_path: Path) -> None:
    m = build_release(store, tmp_path / "rel", "v1", tasks=SUITE, deleted_memory_ids={"mem-gone", "mem-gone2"},
                      deleted_users={"bob"})
    assert m.excluded["held_out_split"] == 2
    assert m.excluded["deleted_user"] == 1 and m.excluded["quotes_deleted_memory"] == 1
    shipped = {r["episode_id"] for r in m.records}
    assert shipped == {f"d{i}{j}" for i in range(3) for j in range(2)} | {"scrub"}
    d = tmp_path / "rel" / "v1"
    blob = "".join((d / f).read_text() for f in ("sft.jsonl", "rl.jsonl"))
    assert EVOLVE.id not in blob and TEST.goal not in blob and "bob's" not in blob
    assert "mem-gone" not in blob and "likes jazz" not in blob and "hates techno" not in blob
    assert m.counts == {"episodes": 7, "sft": 4, "rl_groups": 4}
    # every shipped episode's hash is in the manifest; sampling weights balance capability/difficulty/source
    assert all(len(r["hash"]) == 64 for r in m.records)
    assert set(m.weights) == {"capability", "difficulty", "source"}
    assert sum(r["weight"] for r in m.records) / len(m.records) == pytest.approx(1.0, abs=1e-5)
    assert {r["difficulty"] for r in m.records if r["task_id"] in {t.id for t in DEV[:3]}} == {"medium"}
    assert verify_release(d).version == "v1"
    with pytest.raises(ReleaseError, match="already exists"):
        build_release(store, tmp_path / "rel", "v1", tasks=SUITE)
    m2 = build_release(store, tmp_path / "rel", "v2", tasks=SUITE, parquet=False)
    assert m2.parent == "v1" and "sft.parquet" not in m2.files
    # the datasets library reads the released files as is
    datasets = pytest.importorskip("datasets")
    assert datasets.load_dataset("parquet", data_files=str(d / "sft.parquet"), split="train").num_rows == 4
    assert datasets.load_dataset("json", data_files=str(d / "rl.jsonl"), split="train").num_rows == 4


def test_tampering_is_detected(store: CurationStore, tmp_path: Path) -> None:
    build_release(store, tmp_path / "rel", "v1", tasks=SUITE, parquet=False)
    d = tmp_path / "rel" / "v1"
    sft = d / "sft.jsonl"
    os.chmod(sft, 0o644)
    sft.write_text(sft.read_text() + "{}\n")
    with pytest.raises(ReleaseError, match="sha256 mismatch"):
        verify_release(d)
    manifest = d / "manifest.json"
    os.chmod(manifest, 0o644)
    data = json.loads(manifest.read_text())
    data["counts"]["sft"] = 99
    manifest.write_text(json.dumps(data))
    with pytest.raises(ReleaseError, match="manifest hash"):
        verify_release(d)


def test_empty_release_and_bad_version(tmp_path: Path) -> None:
    with CurationStore(tmp_path / "s.sqlite") as s:
        with pytest.raises(ReleaseError, match="nothing to release"):
            build_release(s, tmp_path / "rel", "v1", tasks=SUITE)
        with pytest.raises(ValueError, match="bad release version"):
            build_release(s, tmp_path / "rel", "../x", tasks=SUITE)
    assert not (tmp_path / "rel" / "v1").exists()


def test_cli_flow_with_a_real_memory_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    svc, adm = "s" * 20, "a" * 20
    policy = AccessPolicy(svc, adm)
    with SqliteMemory(tmp_path / "mem.sqlite", policy) as mem:
        user = Caller.user("alice", policy.user_token("alice"))
        res = mem.write(user, MemoryCandidate(content="likes jazz", tier="user", provenance=Provenance(source="user_statement")))
        mem.delete(user, [res.id])
    traces = tmp_path / "traces"
    traces.mkdir()
    for i, e in enumerate([make_episode([mem_step(res.id, "likes jazz"), WIFI, FIN], task_id=DEV[0].id,
                                        request=DEV[0].goal, verdict=OK, episode_id="m"),
                           make_episode([WIFI, FIN], task_id=EVOLVE.id, request=EVOLVE.goal, verdict=OK, episode_id="e")]):
        lines = [{"type": "header", "schema": 1, "header": e.header.model_dump(mode="json")}]
        lines += [{"type": "step", "step": s.model_dump(mode="json")} for s in e.steps]
        lines.append({"type": "end", "stop_reason": "finish", "verdict": e.verdict.model_dump(mode="json")})
        (traces / f"{i}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    run = CliRunner().invoke
    r = run(export_cli, ["curate", str(traces), "--store", str(tmp_path / "cur.sqlite")])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["accepted"] == 2
    monkeypatch.setenv("POCKETPILOT_SERVICE_TOKEN", svc)
    monkeypatch.setenv("POCKETPILOT_ADMIN_TOKEN", adm)
    r = run(release_cli, ["create", str(tmp_path / "cur.sqlite"), str(tmp_path / "rel"), "v1",
                          "--memory-db", str(tmp_path / "mem.sqlite"), "--no-parquet"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["counts"]["episodes"] == 1 and out["excluded"]["held_out_split"] == 1
    assert "likes jazz" not in (tmp_path / "rel" / "v1" / "sft.jsonl").read_text()
    assert run(release_cli, ["verify", str(tmp_path / "rel" / "v1")]).exit_code == 0
    r = run(export_cli, ["sft", str(traces), "-o", str(tmp_path / "x.jsonl"), "--memory-db", str(tmp_path / "mem.sqlite")])
    assert r.exit_code == 0 and "2 SFT record(s)" in r.output, r.output
    assert "likes jazz" not in (tmp_path / "x.jsonl").read_text()
    r = run(export_cli, ["sft", str(traces), "-o", str(tmp_path / "y.jsonl")])
    assert r.exit_code != 0 and "--memory-db" in r.output
