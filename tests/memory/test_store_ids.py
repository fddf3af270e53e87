"""A store's id source and clock: random and the wall clock by default; a seeded source repeats on a
fresh store and never collides on one that already holds (or deleted) the ids it draws."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import pocketpilot.memory.store as store_module
from pocketpilot.ids import SeededIds
from pocketpilot.memory import MemoryCandidate, MemoryContentError, Provenance, SqliteMemory
from pocketpilot.memory.clock import SteppedClock

FACTS = ["Alice parks on level 3", "Alice's dentist is Dr. Ruiz", "Alice waters the ferns on Sundays"]


def cand(content: str) -> MemoryCandidate:
    return MemoryCandidate(content=content, tier="episodic", provenance=Provenance(source="user_statement"))


def _write(store: SqliteMemory, caller, facts=FACTS) -> list[str]:
    return [store.write(caller, cand(f)).id for f in facts]


def test_by_default_ids_are_random_and_times_the_wall_clock(policy, svc) -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    with SqliteMemory(":memory:", policy) as a, SqliteMemory(":memory:", policy) as b:
        ids_a, ids_b = _write(a, svc), _write(b, svc)
        assert not set(ids_a) & set(ids_b) and len(set(ids_a)) == len(FACTS)
        assert a.get(svc, ids_a[0]).created_at >= before


def test_a_seeded_fresh_store_repeats_its_ids_and_times(policy, svc) -> None:
    start = datetime(2025, 3, 4, 14, 5, tzinfo=UTC)
    runs = []
    for _ in range(2):
        with SqliteMemory(":memory:", policy, ids=SeededIds("task/harness"), clock=SteppedClock(start)) as store:
            ids = _write(store, svc)
            runs.append([(i, store.get(svc, i).created_at) for i in ids])
    assert runs[0] == runs[1]
    assert runs[0][0][1] == start and runs[0][1][1] == start + timedelta(milliseconds=1)  # in write order


def test_a_seed_reused_on_a_store_that_holds_its_ids_neither_overwrites_nor_collides(
        policy, svc, tmp_path: Path) -> None:
    path = tmp_path / "persistent.db"
    with SqliteMemory(path, policy, ids=SeededIds("same-seed")) as store:
        first = _write(store, svc)
    later = ["Alice moved the car to level 5", "Alice's new dentist is Dr. Chen", "Alice waters the ferns on Mondays"]
    with SqliteMemory(path, policy, ids=SeededIds("same-seed")) as store:
        assert SeededIds("same-seed").new_id() == first[0]  # the fresh source would draw a taken id first
        second = _write(store, svc, later)
        assert not set(first) & set(second) and len(set(second)) == len(later)
        assert [store.get(svc, i).content for i in first] == FACTS  # the earlier memories are untouched
        assert [store.get(svc, i).content for i in second] == later
        assert len(store.list_items(svc, limit=50)) == len(FACTS) + len(later)


def test_a_seeded_source_never_hands_out_a_deleted_id_again(policy, svc, alice, tmp_path: Path) -> None:
    path = tmp_path / "persistent.db"
    with SqliteMemory(path, policy, ids=SeededIds("same-seed")) as store:
        gone = _write(store, svc, FACTS[:1])[0]
        assert store.delete(alice, [gone]) == 1
    with SqliteMemory(path, policy, ids=SeededIds("same-seed")) as store:
        new = _write(store, svc, ["Alice parks on level 4"])[0]
    assert new != gone


def test_supersede_draws_from_the_source_and_skips_taken_ids(policy, svc, tmp_path: Path) -> None:
    path = tmp_path / "persistent.db"
    with SqliteMemory(path, policy, ids=SeededIds("s")) as store:
        old = _write(store, svc, FACTS[:1])[0]
    with SqliteMemory(path, policy, ids=SeededIds("s")) as store:
        result = store.supersede(svc, old, cand("Alice parks on level 6"))
        assert result.id != old and result.superseded == old
        assert store.get(svc, old).content == FACTS[0]


class _Stuck:
    def new_id(self) -> str:
        return "0" * 32


def test_a_source_that_only_draws_taken_ids_is_a_typed_error(policy, svc, monkeypatch) -> None:
    monkeypatch.setattr(store_module, "MAX_TAKEN_DRAWS", 5)
    with SqliteMemory(":memory:", policy, ids=_Stuck()) as store:
        store.write(svc, cand(FACTS[0]))
        with pytest.raises(MemoryContentError, match="already holds"):
            store.write(svc, cand(FACTS[1]))
        assert len(store.list_items(svc, limit=10)) == 1


def test_a_stepped_clock_behind_the_wall_clock_still_takes_todays_evidence(policy, svc) -> None:
    # an episode's store runs on its world's clock; the episode it captures records wall-clock times
    with SqliteMemory(":memory:", policy, clock=SteppedClock(datetime(2025, 3, 14, tzinfo=UTC))) as store:
        today = MemoryCandidate(content="Alice asked for the ferns to be watered", tier="episodic",
                                provenance=Provenance(source="episode", observed_at=datetime.now(UTC)))
        result = store.write(svc, today)
        assert result.status == "active" and not result.in_review
        assert store.get(svc, result.id).created_at == datetime(2025, 3, 14, tzinfo=UTC)
        tomorrow = today.model_copy(update={"content": "A note from tomorrow", "provenance": Provenance(
            source="episode", observed_at=datetime.now(UTC) + timedelta(days=1))})
        assert store.write(svc, tomorrow).in_review  # the future is still the future
