"""Deleting a memory deletes what was derived from it; the ledger remembers without the text."""

from __future__ import annotations

import asyncio
import hashlib
import re
import time

from pocketpilot.contracts import Finish, MemorySearch, RetrievedMemory, ToolResult
from pocketpilot.memory import BoundMemory, MemoryCandidate, Provenance
from pocketpilot.memory._rows import content_hash
from pocketpilot.memory.ledger import DeletionLedger, quotes, words
from pocketpilot.trainer_bridge.export_synthetic import make_episode

FACT = "Alice's gate code is 4417 and the spare key is under the blue pot"


def cand(content, tier="episodic", source="user_statement", **prov):
    return MemoryCandidate(content=content, tier=tier, provenance=Provenance(source=source, **prov))


def _used_in_an_episode(store, svc, fact_id: str) -> list[str]:
    """One session that recalls the fact, restates it with memory_write, sends it and summarises it."""
    session = BoundMemory(store, svc, "s1")

    async def run() -> list[str]:
        hits = await session.search("gate code spare key")
        assert [h.id for h in hits] == [fact_id]
        written = await session.write(f"Remember for later: {FACT}", tier="episodic", category=None,
                                      provenance={"step": 1})
        mem = RetrievedMemory(id=fact_id, tier="user", content=FACT, score=1.0, provenance={"owner": "alice"})
        episode = make_episode(
            [
                {"action": MemorySearch(query="gate code"), "retrieved": [mem],
                 "results": [ToolResult.success({"memories": [{"id": fact_id, "content": FACT}]})]},
                {"calls": [("send_message", {"to": "Bob", "text": FACT})],
                 "results": [ToolResult.success({"sent": True})]},
                {"action": Finish(summary="Sent it."), "results": []},
            ],
            request="Text Bob how to get in",
        ).model_copy(update={"stop_detail": f"Sent Bob the note: {FACT}"})
        captured = await session.capture_episode(episode)
        return [written, *captured]

    return asyncio.run(run())


def test_delete_removes_every_copy_an_episode_derived(kw_store, svc, alice):
    fact = kw_store.write(svc, cand(FACT, tier="user")).id
    other = kw_store.write(svc, cand("Bought groceries at the market")).id
    copies = _used_in_an_episode(kw_store, svc, fact)
    contents = {i.content for i in kw_store.list_items(svc)}
    # the memory_write, the tool result and the episode summary each hold the text
    assert len(copies) == 3 and sum(FACT in c for c in contents) == 4
    unrelated = BoundMemory(kw_store, svc, "s2")
    summary = asyncio.run(unrelated.capture_episode(make_episode(
        [{"calls": [("set_wifi", {"enabled": False})], "results": [ToolResult.success({"wifi": False})]},
         {"action": Finish(summary="Done."), "results": []}])))

    assert kw_store.delete(alice, [fact]) == 4
    left = kw_store.list_items(svc)
    assert {i.id for i in left} == {other, *summary}
    assert not any(w in i.content for i in left for w in ("4417", "blue pot"))
    for query in ("4417", "gate code", "spare key blue pot", "Remember for later"):
        assert all("4417" not in h.item.content for h in kw_store.search(svc, query, k=20))
    # the code as a word of its own: the export's random hex ids may hold those digits by chance
    assert not re.search(r"(?<![0-9a-f])4417(?![0-9a-f])", str(kw_store.export(alice)))
    assert "blue pot" not in str(kw_store.export(alice))
    assert kw_store.deleted_ids(alice) >= {fact, *copies}


def test_delete_follows_consolidation_links_but_not_stock_phrases(kw_store, svc, alice):
    from pocketpilot.memory import consolidate

    a = kw_store.write(svc, cand("Alice charges the phone overnight in the kitchen", source="episode")).id
    b = kw_store.write(svc, cand("Alice charged the phone overnight in the kitchen", source="episode")).id
    keep = kw_store.write(svc, cand("Alice charges the watch overnight", source="episode")).id
    lt = consolidate(kw_store, svc, jaccard_threshold=0.6).created[0]
    assert kw_store.delete(alice, [lt]) == 3  # the fact and the two episodes it was made from
    assert [i.id for i in kw_store.list_items(svc)] == [keep]
    assert a in kw_store.deleted_ids(alice) and b in kw_store.deleted_ids(alice)


def test_deleting_one_episode_takes_the_fact_built_from_it_not_its_siblings(kw_store, svc, alice):
    from pocketpilot.memory import consolidate

    a = kw_store.write(svc, cand("Alice charges the phone overnight in the kitchen", source="episode")).id
    b = kw_store.write(svc, cand("Alice charged the phone overnight in the hall", source="episode")).id
    lt = consolidate(kw_store, svc, jaccard_threshold=0.5).created[0]
    assert kw_store.get(svc, lt).content != kw_store.get(svc, a).content  # linked by provenance, not by text
    assert kw_store.delete(alice, [a]) == 2
    assert [i.id for i in kw_store.list_items(svc)] == [b]
    assert lt in kw_store.deleted_ids(alice)


def test_a_restated_fact_is_stored_again(kw_store, svc, alice):
    """Deleting a recalled memory must drop its recall tags: else saying it again is "recalled" and vanishes."""
    first = kw_store.write(svc, cand("My locker number is 318", tier="user")).id
    kw_store.mark_recalled(svc, "s1", [first])
    assert kw_store.delete(alice, [first]) == 1
    gone = content_hash("My locker number is 318")
    assert kw_store._db.scalar("SELECT count(*) FROM recalls WHERE item_id = ? OR content_hash = ?",
                               (first, gone)) == 0
    again = kw_store.write(svc, cand("my locker number is 318", tier="user", session_id="s1"))
    assert again.status == "active" and again.id != first
    assert [h.item.id for h in kw_store.search(svc, "locker number")] == [again.id]
    assert [r["id"] for r in kw_store.export(alice)] == [again.id]  # new evidence: exported again


def test_ledger_is_keyed_and_holds_no_text(kw_store, svc, alice, admin):
    before = time.time()
    item = kw_store.write(svc, cand(FACT, tier="user")).id
    kw_store.delete(alice, [item])
    rows = kw_store._db.query("SELECT digest FROM deleted_text")
    assert rows
    plain = " ".join(words(FACT)).encode()
    unkeyed = {hashlib.sha256(plain).digest()[:16], hashlib.blake2b(plain, digest_size=16).digest()}
    assert not {bytes(d) for (d,) in rows} & unkeyed
    ledger = kw_store.deletion_ledger(admin)
    assert ledger.quotes(f"the planner said: {FACT.upper()}!", made_at=before)
    assert not ledger.quotes(f"the planner said: {FACT}", made_at=time.time() + 1)  # said after the deletion
    assert not ledger.quotes("Alice's gate code changed", made_at=before)
    other_key = DeletionLedger((b"k" * 32,), ledger.ids, ledger.digests, ledger.lengths)
    assert not other_key.quotes(FACT, made_at=before)


def test_memory_export_leaves_out_quotes_of_deleted_text(kw_store, svc, alice):
    fact = kw_store.write(svc, cand("The boat is moored at pier nine behind the red shed", tier="user")).id
    quote = kw_store.write(svc, cand("Note: the boat is moored at pier nine behind the red shed, ask Tom")).id
    # a deletion that did not reach the copy (an older pocketpilot, a copy made by another route)
    row = kw_store._db.query("SELECT rid, id, owner FROM items WHERE id = ?", (fact,))[0]
    kw_store._delete_rows([(int(row[0]), str(row[1]), str(row[2]))], derived=False)
    assert quote in {i.id for i in kw_store.list_items(svc)}
    assert [r["id"] for r in kw_store.export(alice)] == []


def test_quote_matching_ignores_case_and_punctuation_and_needs_a_long_run():
    long = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    assert quotes('{"text": "ONE two, three-four five six seven eight nine ten eleven twelve"}', long)
    assert not quotes("one two three four five six seven eight nine ten eleven", long)
    assert quotes("I said: Hi there!", "hi there") is False  # under three words: exact text only
    assert quotes("Hi, there", "hi there")


def test_ledger_cannot_confirm_a_guessed_secret(kw_store, svc, alice, admin):
    before = time.time()
    pin = kw_store.write(svc, cand("My bank PIN is 4921", tier="user")).id
    kw_store.delete(alice, [pin])
    ledger = kw_store.deletion_ledger(admin)
    assert ledger.quotes("note: my bank PIN is 4921", made_at=before)  # quotes are still caught
    # ...but every guess matches alike: the digests were made with the secret redacted
    assert all(ledger.quotes(f"My bank PIN is {guess:04d}", made_at=before) for guess in (0, 1234, 4920))
    assert not ledger.quotes("My bank account is overdrawn", made_at=before)


def test_copies_are_found_whatever_the_case_and_diacritics(kw_store, svc, alice):
    fact = kw_store.write(svc, cand("Die Straße zum Café Müller ist gesperrt", tier="user")).id
    same = kw_store.write(svc, cand("Gesagt: die Straße zum Café Müller ist gesperrt")).id
    folded = kw_store.write(svc, cand("DIE STRASSE ZUM CAFE MULLER IST GESPERRT!")).id
    other = kw_store.write(svc, cand("Das Café hat heute zu")).id
    assert kw_store.delete(alice, [fact]) == 3
    assert {same, folded} <= kw_store.deleted_ids(alice)
    assert [i.id for i in kw_store.list_items(svc)] == [other]
