from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from pocketpilot.errors import MemoryNotFoundError, MemoryStoreError
from pocketpilot.memory import MemoryCandidate, MemoryContentError, Provenance, SearchFilters


def cand(content, tier="episodic", source="user_statement", **kw):
    prov = kw.pop("prov", {})
    return MemoryCandidate(content=content, tier=tier, provenance=Provenance(source=source, **prov), **kw)


def test_write_get_roundtrip_with_provenance(kw_store, svc):
    # observed an hour east of UTC, days before the write: the store must keep this instant, not "now"
    three_days_ago = datetime.now(UTC).replace(microsecond=0) - timedelta(days=3)
    when = three_days_ago.astimezone(timezone(timedelta(hours=1)))
    res = kw_store.write(svc, cand("Alice prefers dark mode", tier="user", category="preference",
                                   prov={"session_id": "s1", "step": 3, "observed_at": when,
                                         "evidence": "episode:e1/step:3"}))
    assert res.status == "active" and res.tier == "user"
    item = kw_store.get(svc, res.id)
    assert item.owner == "alice" and item.tier == "user" and item.category == "preference"
    assert item.provenance.source == "user_statement" and item.provenance.session_id == "s1"
    assert item.provenance.step == 3 and item.provenance.evidence == "episode:e1/step:3"
    assert item.trust == pytest.approx(0.9)
    assert item.provenance.observed_at == when
    assert item.provenance.observed_at.utcoffset() == timedelta(0)  # normalized to UTC
    assert item.created_at > when


@pytest.mark.parametrize("bad", ["", "   \n", "x" * 4001, "bin\x00ary", b"bytes", 42, "\ud800 lone surrogate"])
def test_bad_content_is_a_typed_error_and_writes_nothing(kw_store, svc, bad):
    kw_store.write(svc, cand("keep me"))
    with pytest.raises(MemoryContentError):
        kw_store.write_many(svc, [cand("fine one"), MemoryCandidate.model_construct(
            content=bad, tier="episodic", category=None, key=None, importance=0.5,
            provenance=Provenance(source="episode"), due_at=None, due_condition=None)])
    assert [i.content for i in kw_store.list_items(svc)] == ["keep me"]
    assert issubclass(MemoryContentError, MemoryStoreError)


def test_duplicate_is_not_stored_twice(kw_store, svc):
    a = kw_store.write(svc, cand("The office wifi is called Polaris"))
    b = kw_store.write(svc, cand("the office  WIFI is called polaris"))
    assert b.status == "duplicate" and b.id == a.id
    assert len(kw_store.list_items(svc)) == 1


def test_conflict_supersedes_explicitly_and_keeps_history(kw_store, svc):
    old = kw_store.write(svc, cand("My sister's birthday is March 3", tier="user"))
    new = kw_store.write(svc, cand("My sister's birthday is March 5", tier="user"))
    assert new.status == "active" and new.superseded == old.id
    old_item = kw_store.get(svc, old.id)
    assert old_item.status == "superseded" and old_item.superseded_by == new.id
    assert [i.id for i in kw_store.history(svc, old.id)] == [old.id, new.id]
    hits = kw_store.search(svc, "sister birthday")
    assert [h.item.id for h in hits] == [new.id]
    hist = kw_store.search(svc, "sister birthday", filters=SearchFilters(include_superseded=True))
    assert {h.item.id for h in hist} == {old.id, new.id}


def test_weaker_conflicting_evidence_goes_to_review(kw_store, svc):
    fact = kw_store.write(svc, cand("My sister's birthday is March 3", tier="user"))
    weak = kw_store.write(svc, cand("My sister's birthday is June 1", tier="user", source="tool_result",
                                    prov={"trust": 0.85}))
    assert weak.status == "candidate" and weak.tier == "review"
    assert kw_store.get(svc, fact.id).status == "active"
    queued = kw_store.review_queue(svc)
    assert [q.id for q in queued] == [weak.id] and queued[0].conflicts_with == fact.id
    assert queued[0].proposed_tier == "user"
    assert kw_store.search(svc, "june birthday") == [] or all(
        h.item.tier != "review" for h in kw_store.search(svc, "june birthday"))


def test_review_resolution_accept_supersedes(kw_store, svc, alice):
    fact = kw_store.write(svc, cand("My sister's birthday is March 3", tier="user"))
    weak = kw_store.write(svc, cand("My sister's birthday is June 1", tier="user", source="tool_result",
                                    prov={"trust": 0.85}))
    with pytest.raises(PermissionError):  # the service token may not decide reviews
        kw_store.resolve_review(svc, weak.id, accept=True)
    accepted = kw_store.resolve_review(alice, weak.id, accept=True)
    assert accepted.tier == "user" and accepted.status == "active" and accepted.supersedes == fact.id
    assert kw_store.get(alice, fact.id).status == "superseded"


@pytest.mark.parametrize(
    ("candidate", "reason"),
    [
        (cand("User probably likes jazz", tier="episodic", source="inference"), "without a pointer"),
        (cand("User is vegetarian", tier="user", source="inference", prov={"evidence": "step 3"}), "may not write"),
        (cand("Meeting moved", prov={"trust": 0.1}), "trust"),
        (cand("Old note", prov={"observed_at": datetime.now(UTC) - timedelta(days=800)}), "stale"),
        (cand("From the future", prov={"observed_at": datetime.now(UTC) + timedelta(days=1)}), "future"),
    ],
)
def test_verification_checks_send_to_review(kw_store, svc, candidate, reason):
    kw_store.write(svc, cand("Charged the phone today"))  # the owner's newest event: age is measured from it
    res = kw_store.write(svc, candidate)
    assert res.status == "candidate" and res.in_review and reason in res.reason
    assert kw_store.get(svc, res.id).tier == "review"


def test_prospective_states_and_due(kw_store, svc):
    now = datetime.now(UTC)
    due = kw_store.write(svc, cand("Call the dentist", tier="prospective", due_at=now - timedelta(minutes=1)))
    later = kw_store.write(svc, cand("Renew passport", tier="prospective", due_at=now + timedelta(days=30)))
    assert kw_store.get(svc, due.id).state == "pending"
    assert [i.id for i in kw_store.due(svc)] == [due.id]
    kw_store.set_state(svc, due.id, "done")
    assert kw_store.due(svc) == []
    assert [i.id for i in kw_store.due(svc, now + timedelta(days=31))] == [later.id]
    with pytest.raises(MemoryContentError):
        kw_store.set_state(svc, due.id, "exploded")
    ep = kw_store.write(svc, cand("An episode"))
    with pytest.raises(MemoryContentError):
        kw_store.set_state(svc, ep.id, "done")


def test_recalled_content_is_not_new_evidence(kw_store, svc):
    fact = kw_store.write(svc, cand("Bob's flight lands at 18:40", tier="long_term"))
    kw_store.mark_recalled(svc, "sess-1", [fact.id])
    again = kw_store.write(svc, cand("Bob's flight lands at 18:40", tier="episodic", source="episode",
                                     prov={"session_id": "sess-1"}))
    assert again.status == "recalled" and again.id == fact.id
    flagged = kw_store.write(svc, cand("Bob's flight lands at 18:40", tier="episodic",
                                       prov={"recalled": True}))
    assert flagged.status == "recalled"
    assert kw_store.get(svc, fact.id).recall_count == 1
    assert kw_store.was_recalled(svc, "sess-1", "bob's flight lands at 18:40") == fact.id
    assert len(kw_store.list_items(svc)) == 1


def test_filters_tier_category_time(kw_store, svc):
    kw_store.write(svc, cand("coffee order oat latte", tier="user", category="preference"))
    kw_store.write(svc, cand("coffee with Bob on Monday", tier="episodic", category="event",
                             prov={"observed_at": datetime.now(UTC) - timedelta(days=10)}))
    assert {h.item.tier for h in kw_store.search(svc, "coffee", filters=SearchFilters(tiers=("user",)))} == {"user"}
    assert {h.item.category for h in kw_store.search(svc, "coffee", filters=SearchFilters(category="event"))} == {"event"}
    recent = kw_store.search(svc, "coffee", filters=SearchFilters(since=datetime.now(UTC) - timedelta(days=1)))
    assert [h.item.category for h in recent] == ["preference"]


def test_keyword_only_store_says_so(kw_store, svc, caplog):
    kw_store.write(svc, cand("the router admin page is 192.168.0.1"))
    hits = kw_store.search(svc, "router admin")
    assert kw_store.keyword_only and hits and all(h.keyword_only for h in hits)
    assert hits[0].provenance_dict()["keyword_only"] is True
    assert "vector_rank" not in hits[0].scores


def test_missing_id(kw_store, svc):
    with pytest.raises(MemoryNotFoundError):
        kw_store.get(svc, "nope")


def test_k_out_of_range(kw_store, svc):
    with pytest.raises(MemoryContentError):
        kw_store.search(svc, "x", k=0)
    with pytest.raises(MemoryContentError):
        kw_store.search(svc, b"bytes")  # type: ignore[arg-type]
