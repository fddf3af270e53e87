from __future__ import annotations

import pytest

from pocketpilot.memory import MemoryCandidate, Provenance, Redactor, consolidate


def ep(content):
    return MemoryCandidate(content=content, provenance=Provenance(source="episode"))


def test_consolidation_merges_recurring_episodes(store, svc):
    a = store.write(svc, ep("Alice turns on Do Not Disturb at 22:00")).id
    b = store.write(svc, ep("Alice turned on Do Not Disturb at 22:00")).id
    c = store.write(svc, ep("Bought groceries at the market")).id
    report = consolidate(store, svc)
    assert report.examined == 3 and report.clusters == 1 and len(report.created) == 1
    lt = store.get(svc, report.created[0])
    assert lt.tier == "long_term" and lt.provenance.source == "consolidation"
    assert a in lt.provenance.evidence and b in lt.provenance.evidence
    assert store.get(svc, a).consolidated_into == lt.id and store.get(svc, c).consolidated_into is None
    # Idempotent; a later repetition merges into the existing long-term fact.
    assert consolidate(store, svc).created == []
    d = store.write(svc, ep("Alice turns on Do Not Disturb at 22:00 again")).id
    e = store.write(svc, ep("Alice turns on do not disturb at 22:00 every night")).id
    again = consolidate(store, svc)
    assert again.created == [] and again.merged_into_existing == [lt.id]
    assert store.get(svc, d).consolidated_into == lt.id == store.get(svc, e).consolidated_into


def test_consolidation_keyword_only_uses_jaccard(kw_store, svc):
    kw_store.write(svc, ep("charged the phone overnight in the kitchen"))
    kw_store.write(svc, ep("charged the phone overnight in the kitchen today"))
    assert len(consolidate(kw_store, svc).created) == 1


@pytest.mark.parametrize(
    ("text", "leaked", "label"),
    [
        ("email me at jane.doe@example.org", "jane.doe@example.org", "EMAIL"),
        ("call +44 20 7946 0958 after lunch", "7946", "PHONE"),
        ("her number is (555) 010-9999", "010-9999", "PHONE"),
        ("I live at 1600 Pennsylvania Avenue", "1600 Pennsylvania", "ADDRESS"),
        ("ship to 221B Baker Street, London NW1 6XE", "Baker Street", "ADDRESS"),
        ("my passport number is X1234567", "X1234567", "ID"),
        ("card 4111 1111 1111 1111 expires soon", "4111", "ID"),
        ("SSN 123-45-6789", "123-45-6789", "ID"),
        ("IBAN DE89 3704 0044 0532 0130 00", "3704", "ID"),
        ("remind my sister Maria about the party", "Maria", "NAME"),
        ("Text John that I am late", "John", "NAME"),
        ("meeting with Dr. Okafor tomorrow", "Okafor", "NAME"),
    ],
)
def test_redaction_removes_personal_details(text, leaked, label):
    result = Redactor().redact(text)
    assert leaked not in result.text and f"[{label}]" in result.text and result.changed


def test_known_names_and_harmless_text():
    r = Redactor(names=["Priya Raman"])
    assert r.redact("priya raman asked for the wifi").text == "[NAME] asked for the wifi"
    for harmless in ("Turn on airplane mode at 10:30", "set volume to 5", "battery at 45%",
                     "Enable Do Not Disturb on Monday", "version 2.3.1"):
        assert Redactor().redact(harmless).text == harmless
