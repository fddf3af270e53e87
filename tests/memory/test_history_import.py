"""Dated history stays visible: imports keep event times, and age is measured from the owner's newest event."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from pocketpilot.cli.memory import memory
from pocketpilot.memory import MemoryCandidate, MemoryContentError, Provenance, SqliteMemory

SERVICE = "service-token-0123456789"  # as in conftest.py
ADMIN = "admin-credential-9876543210"
Y2023 = datetime(2023, 3, 1, 12, tzinfo=UTC)


def dated(content, when, tier="episodic", source="user_statement"):
    return MemoryCandidate(content=content, tier=tier, provenance=Provenance(source=source, observed_at=when))


def test_imported_2023_history_is_active_and_found_by_default_search(kw_store, svc):
    history = [dated(f"Chat {i}: we planned the Lisbon trip, day {i}", Y2023 + timedelta(days=30 * i))
               for i in range(14)]  # more than a year of history
    results = kw_store.import_history(svc, history)
    assert [r.status for r in results] == ["active"] * 14 and not any(r.in_review for r in results)
    hits = kw_store.search(svc, "Lisbon trip", k=20)
    assert len(hits) == 14
    first = kw_store.get(svc, results[0].id)
    assert first.provenance.observed_at == Y2023  # the event time, not the import time


def test_import_orders_by_event_time_so_the_later_fact_wins(kw_store, svc):
    later = dated("My favourite cafe is Nata", Y2023 + timedelta(days=90), tier="user")
    earlier = dated("My favourite cafe is Bica", Y2023, tier="user")
    new, old = kw_store.import_history(svc, [later, earlier])
    assert new.status == "active" and new.superseded == old.id
    assert kw_store.get(svc, old.id).status == "superseded"


def test_import_needs_event_times(kw_store, svc):
    with pytest.raises(MemoryContentError, match="observed_at"):
        kw_store.import_history(svc, [dated("dated", Y2023), MemoryCandidate(
            content="undated", provenance=Provenance(source="user_statement"))])
    assert kw_store.list_items(svc) == []


def test_age_is_measured_from_the_owners_newest_event_not_the_wall_clock(kw_store, svc, svc_bob):
    assert kw_store.write(svc, dated("Ran the Porto half marathon", Y2023)).status == "active"
    kw_store.write(svc_bob, dated("Bob started a new job", datetime.now(UTC)))  # another owner's clock
    assert kw_store.write(svc, dated("Visited grandma in Braga", Y2023 - timedelta(days=30))).status == "active"
    kw_store.write(svc, dated("Booked flights for the summer", datetime.now(UTC)))
    stale = kw_store.write(svc, dated("Bought a red umbrella", Y2023))
    assert stale.in_review and "older than the owner's newest event" in stale.reason


def test_cli_import_says_loudly_when_a_record_lands_in_review(tmp_path, policy, svc):
    path = tmp_path / "m.db"
    with SqliteMemory(path, policy) as store:
        store.write(svc, MemoryCandidate(content="My favourite colour is blue", tier="user",
                                         provenance=Provenance(source="user_statement")))
    history = tmp_path / "history.jsonl"
    history.write_text("\n".join(json.dumps(r) for r in [
        {"content": "We talked about the dentist", "observed_at": "2023-05-01T10:00:00Z"},
        {"content": "My favourite colour is green", "tier": "user", "observed_at": "2023-06-01T10:00:00Z"},
    ]) + "\n")
    env = {"POCKETPILOT_SERVICE_TOKEN": SERVICE, "POCKETPILOT_ADMIN_TOKEN": ADMIN}
    res = CliRunner().invoke(memory, ["import", str(path), str(history), "--user", "alice", "--keyword-only"], env=env)
    assert res.exit_code == 3
    summary = json.loads(res.stdout.splitlines()[0])
    assert summary["imported"] == 2 and summary["active"] == 1 and summary["in_review"] == 1
    assert "REVIEW" in res.stderr and "conflicts" in res.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "no date"}\n')
    res = CliRunner().invoke(memory, ["import", str(path), str(bad), "--user", "alice", "--keyword-only"], env=env)
    assert res.exit_code == 1 and "bad.jsonl:1" in res.output
