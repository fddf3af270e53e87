from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketpilot.cli.review import review as review_cli
from pocketpilot.contracts import CriterionResult, Finish, MemorySearch, Refuse, RetrievedMemory, ToolResult, Verdict
from pocketpilot.tasks import load_suite
from pocketpilot.trainer_bridge.curation import content_hash, curate, curate_one
from pocketpilot.trainer_bridge.curation_pii import find_pii
from pocketpilot.trainer_bridge.export_synthetic import make_episode
from pocketpilot.trainer_bridge.review import CurationStore, ReviewError, ReviewNotFoundError

OK = Verdict(success=True, criteria=[CriterionResult(name="a", passed=True)])
BAD = Verdict(success=False, criteria=[CriterionResult(name="state x", passed=False, detail="x is 1")])
WIFI = {"calls": [("set_wifi", {"enabled": False})], "results": [ToolResult.success({"wifi": False})]}
FIN = {"action": Finish(summary="Wifi   is off."), "results": []}


def ep(steps=(WIFI, FIN), verdict=OK, **kw):
    return make_episode(list(steps), verdict=verdict, **kw)


def test_normalize_and_dedupe_ignore_ids_and_whitespace() -> None:
    a = ep(episode_id="a", request="Turn  wifi off ")
    b = ep(episode_id="b", request="Turn wifi off")
    assert content_hash(curate_one(a).to_episode()) == content_hash(curate_one(b).to_episode())
    result = curate([(a, True), (b, True), (ep(episode_id="c", request="other"), True)])
    assert result.duplicates == 1 and len(result.records) == 2
    assert result.records[0].to_episode().steps[-1].action.summary == "Wifi is off."


def test_schema_evidence_safety_and_conflicts_route_records() -> None:
    broken = ep([{"calls": [("set_wifi", {"enabled": False})], "results": []}, FIN])
    assert curate_one(broken).decision == "reject"
    unbacked = ep([FIN])
    r = curate_one(unbacked)
    assert r.decision == "review" and "finish_without_evidence" in r.reasons
    sms = {"calls": [("send_sms", {"to": "+44 7700 900123", "body": "hi"})], "results": [ToolResult.success()]}
    r = curate_one(ep([sms, FIN]))
    assert {"destructive_tool", "pii:phone"} <= set(r.reasons) and r.decision == "review"
    r = curate_one(ep([{"action": Refuse(reason="unsafe"), "results": []}], stop_reason="refuse"))
    assert "refusal" in r.reasons
    assert "incomplete_trace" in curate_one(ep(), complete=False).reasons
    assert "no_verdict" in curate_one(ep(verdict=None)).reasons
    clean = curate_one(ep())
    assert clean.decision == "accept" and clean.reasons == []
    # same request, same actions, different verdicts: both go to review
    res = curate([(ep(episode_id="1", request="r", steps=[WIFI, {"action": Finish(summary="a"), "results": []}]), True),
                  (ep(episode_id="2", request="r", verdict=BAD,
                      steps=[{"calls": [("set_wifi", {"enabled": False})], "results": [ToolResult.success({"x": 2})]},
                             {"action": Finish(summary="a"), "results": []}]), True)])
    assert [("verdict_conflict" in x.reasons) for x in res.records] == [True, True]


def test_tags_and_failure_attribution() -> None:
    task = load_suite("dev")[0]
    r = curate_one(ep(task_id=task.id, verdict=BAD), task=task)
    assert f"capability:{task.capability}" in r.tags and "split:dev" in r.tags and "tool:set_wifi" in r.tags
    assert r.source == "sandbox" and r.attribution is not None and r.attribution["side"] in ("model", "harness", "unknown")
    assert curate_one(ep()).source == "deployment"


def test_pii_detectors_are_narrow() -> None:
    assert find_pii("mail bob@example.com, card 4111 1111 1111 1111") == ["card", "email"]
    assert find_pii("alarm at 07:30 on 2024-03-12, 8432 steps, card 4111 1111 1111 1112") == []


# A uuid4 hex opening with a Luhn-valid 15-digit run: a random memory id like it sent
# test_cli_flow_with_a_real_memory_store's trace to review as pii:card now and then.
CARD_SHAPED_ID = "417941453672497cabf9968214e14df7"


def test_card_detector_skips_ids_and_decimals_but_not_cards() -> None:
    assert find_pii(f'{{"id": "{CARD_SHAPED_ID}"}}') == []
    assert find_pii('{"score": 0.4111111111111111}') == []  # a float's fraction, Luhn-valid digits
    assert find_pii("41111111-1111-1111-1111-abcdefabcdef") == []  # groups of a dashed id
    for text in ("card 4111111111111111.", "card:4111-1111-1111-1111", '{"card": "4111111111111111"}'):
        assert find_pii(text) == ["card"], text


def test_memory_search_with_a_card_shaped_id_is_accepted() -> None:
    m = RetrievedMemory(id=CARD_SHAPED_ID, tier="user", content="likes jazz", score=1.0, provenance={"owner": "alice"})
    data = {"memories": [{"id": CARD_SHAPED_ID, "tier": "user", "content": "likes jazz"}]}
    search = {"action": MemorySearch(query="prefs"), "results": [ToolResult.success(data)], "retrieved": [m]}
    r = curate_one(ep([search, WIFI, FIN]))
    assert r.decision == "accept", r.reasons


@pytest.fixture
def store(tmp_path: Path) -> CurationStore:
    s = CurationStore(tmp_path / "cur.sqlite")
    yield s
    s.close()


def test_store_review_decisions(store: CurationStore, tmp_path: Path) -> None:
    recs = [curate_one(ep(episode_id="ok")), curate_one(ep([FIN], episode_id="u")),
            curate_one(ep([FIN], request="two", episode_id="v")), curate_one(ep([FIN], request="three"))]
    assert store.add(recs) == {"accepted": 1, "pending": 3, "rejected": 0, "duplicates": 0}
    assert store.add(recs[:1])["duplicates"] == 1
    pending = [h for h, _, _ in store.records("pending")]
    store.approve(pending[0][:8])
    store.quarantine(pending[1])
    with pytest.raises(ReviewError, match="not pending"):
        store.reject(pending[0])
    with pytest.raises(ReviewNotFoundError):
        store.approve("ffffffffff")
    with pytest.raises(ReviewError, match="schema"):
        store.fix(pending[2], ep([{"calls": [("set_wifi", {})], "results": []}]))
    fixed = ep([WIFI, FIN], request="three")
    store.fix(pending[2], fixed, note="added the missing call")
    assert store.counts() == {"accepted": 1, "approved": 1, "quarantined": 1, "fixed": 1}
    shipped = {rec.hash: e for rec, e in store.releasable()}
    assert pending[1] not in shipped and len(shipped) == 3
    assert shipped[pending[2]].steps[0].action.calls[0].name == "set_wifi"  # the fix ships
    store.reopen(pending[1])
    assert store.status(pending[1]) == "pending"
    # a second handle sees committed decisions (atomic writes)
    with CurationStore(store.path) as other:
        assert other.status(pending[0]) == "approved"
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(ReviewError, match="not a curation store"):
        CurationStore(tmp_path / "junk.sqlite")


def test_review_cli(store: CurationStore, tmp_path: Path) -> None:
    store.add([curate_one(ep([FIN], episode_id="u")), curate_one(ep([FIN], request="b"))])
    run = CliRunner().invoke
    res = run(review_cli, ["list", "--store", str(store.path)])
    assert res.exit_code == 0 and res.output.count("finish_without_evidence") == 2
    h1, h2 = [line.split()[0] for line in res.output.splitlines()]
    res = run(review_cli, ["show", "--store", str(store.path), h1])
    assert res.exit_code == 0 and '"status": "pending"' in res.output
    assert run(review_cli, ["reject", "--store", str(store.path), h1, "--note", "bad"]).exit_code == 0
    fix = tmp_path / "fix.json"
    fix.write_text(ep([WIFI, FIN], request="b").model_dump_json())
    res = run(review_cli, ["fix", "--store", str(store.path), h2, str(fix)])
    assert res.exit_code == 0 and "fixed" in res.output
    res = run(review_cli, ["list", "--store", str(store.path), "--status", "all"])
    assert "rejected" in res.output and "fixed" in res.output
    res = run(review_cli, ["approve", "--store", str(store.path), h1])
    assert res.exit_code != 0 and isinstance(res.exception, ReviewError)
