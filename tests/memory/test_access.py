from __future__ import annotations

import pytest

from pocketpilot.errors import MemoryAccessError
from pocketpilot.memory import AccessPolicy, Caller, MemoryCandidate, Provenance, SqliteMemory
from pocketpilot.memory.access import SHARED_OWNER

SERVICE = "service-token-0123456789"  # as in conftest.py
ADMIN = "admin-credential-9876543210"


def cand(content, tier="episodic"):
    return MemoryCandidate(content=content, tier=tier, provenance=Provenance(source="user_statement"))


# Near-identical private facts of two users: retrieval must never cross owners.
ADVERSARIAL = [
    ("My bank PIN is 4921", "My bank PIN is 8810"),
    ("My sister Maria's birthday is March 3", "My sister Maria's birthday is March 4"),
    ("Home address: 12 Oak Street", "Home address: 14 Oak Street"),
    ("Doctor appointment on Friday at 9", "Doctor appointment on Friday at 10"),
]
QUERIES = ["bank PIN", "what is my PIN", "sister birthday", "Maria", "home address Oak Street",
           "doctor appointment Friday", "PIN 8810", "14 Oak Street", "March 4"]


def _fill(store, svc, svc_bob):
    for mine, theirs in ADVERSARIAL:
        store.write(svc, cand(mine, tier="user"))
        store.write(svc_bob, cand(theirs, tier="user"))


@pytest.mark.parametrize("query", QUERIES)
def test_no_cross_owner_leakage_semantic(store, svc, svc_bob, query):
    _fill(store, svc, svc_bob)
    bob_contents = {b for _, b in ADVERSARIAL}
    for k in (1, 5, 20):
        hits = store.search(svc, query, k=k)
        assert hits  # alice has a near-identical fact of her own: an empty answer would prove nothing
        assert all(h.item.owner == "alice" for h in hits)
        assert not {h.item.content for h in hits} & bob_contents
    assert {h.item.owner for h in store.search(svc_bob, query, k=20)} <= {"bob"}


def test_direct_read_of_another_owner_is_denied(kw_store, svc, svc_bob, bob, alice):
    mine = kw_store.write(svc, cand("alice secret")).id
    with pytest.raises(MemoryAccessError):
        kw_store.get(svc_bob, mine)
    with pytest.raises(MemoryAccessError):
        kw_store.get(bob, mine)
    with pytest.raises(MemoryAccessError):
        kw_store.delete(bob, [mine])
    assert kw_store.get(alice, mine).content == "alice secret"
    assert kw_store.search(bob, "alice secret") == []


@pytest.mark.parametrize(
    "caller",
    [
        Caller.service("wrong-token-0000000000", acting_for="alice"),
        Caller.user("alice", "forged"),
        Caller.admin(SERVICE),  # the service token is not the admin credential
        Caller.user("alice", AccessPolicy(SERVICE, ADMIN).user_token("bob")),  # bob's token, alice's name
    ],
)
def test_bad_credentials_rejected_everywhere(kw_store, svc, caller):
    item = kw_store.write(svc, cand("something")).id
    for call in (
        lambda: kw_store.search(caller, "something"),
        lambda: kw_store.get(caller, item),
        lambda: kw_store.write(caller, cand("more")),
        lambda: kw_store.list_items(caller),
        lambda: kw_store.export(caller),
        lambda: kw_store.delete(caller, [item]),
    ):
        with pytest.raises(MemoryAccessError):
            call()
    assert len(kw_store.list_items(svc)) == 1


def test_service_cannot_export_or_delete_but_user_and_admin_can(kw_store, svc, alice, admin):
    item = kw_store.write(svc, cand("to be forgotten")).id
    with pytest.raises(MemoryAccessError):
        kw_store.export(svc)
    with pytest.raises(MemoryAccessError):
        kw_store.delete(svc, [item])
    assert [r["id"] for r in kw_store.export(alice)] == [item]
    assert len(kw_store.list_items(admin)) == 1  # admin sees every owner
    assert kw_store.delete(admin, [item]) == 1


def test_policy_rejects_weak_or_shared_secrets():
    with pytest.raises(MemoryAccessError):
        AccessPolicy("short", ADMIN)
    with pytest.raises(MemoryAccessError):
        AccessPolicy(SERVICE, SERVICE)


def test_token_not_in_repr():
    c = Caller.service(SERVICE, acting_for="alice")
    assert SERVICE not in repr(c) and SERVICE not in str(c.model_dump())


def test_shared_store_redacts_and_is_readable_by_all(tmp_path, policy, svc, bob, alice):
    shared = SqliteMemory(tmp_path / "shared.db", policy, shared=True)
    res = shared.write(svc, cand("Texted my sister Maria at +1 555 123 4567 via Messages; worked"))
    item = shared.get(bob, res.id)
    assert item.owner == SHARED_OWNER
    assert "Maria" not in item.content and "555" not in item.content
    assert "[NAME]" in item.content and "[PHONE]" in item.content
    assert shared.search(alice, "texted via Messages")
    with pytest.raises(MemoryAccessError):
        shared.write(alice, cand("users cannot write shared experience"))
    with pytest.raises(MemoryAccessError):
        shared.delete(alice, [res.id])
    shared.close()


def test_store_refuses_other_credentials(tmp_path, policy):
    SqliteMemory(tmp_path / "m.db", policy).close()
    with pytest.raises(MemoryAccessError, match="do not match"):
        SqliteMemory(tmp_path / "m.db", AccessPolicy(SERVICE, "another-admin-credential"))
