"""The email app: folders, drafts, sending to addresses and contacts."""

from __future__ import annotations

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

from pocketpilot.executor.sandbox import PhoneState


def _sent(s: PhoneState) -> list:
    return [m for m in s.email.items if m.folder == "sent" and m.id != "mail-6"]


SUCCESSES = [
    Ok("list_emails", {}, lambda d, s: [m["id"] for m in d] == ["mail-1", "mail-4", "mail-2", "mail-3"]),
    Ok("list_emails", {"unread_only": True}, lambda d, s: {m["id"] for m in d} == {"mail-1", "mail-4"}),
    Ok("list_emails", {"folder": "spam"}, lambda d, s: [m["id"] for m in d] == ["mail-5"]),
    Ok("read_email", {"email_id": "mail-4"}, lambda d, s: d["cc"] == ["alice.chen@example.com"] and not d["read"]),
    Ok("search_emails", {"query": "q1 REPORT"}, lambda d, s: [m["id"] for m in d] == ["mail-1"]),
    Ok("search_emails", {"query": "report", "folder": "archive"}, lambda d, s: d == []),
    Ok("send_email", {"to": ["Mom"], "subject": "Hi", "body": "Landed."},
       lambda d, s: d["to"] == ["dana.lee@example.com"] and d["id"] == "mail-8" and _sent(s)[0].body == "Landed."
       and s.email.next_id == 9),
    Ok("send_email", {"to": ["x@y.org"], "subject": "S", "body": "B", "cc": ["Bob"]},
       lambda d, s: _sent(s)[0].cc == ["bob@example.com"]),
    Ok("reply_email", {"email_id": "mail-4", "body": "Yes!", "reply_all": True},
       lambda d, s: d["to"] == ["bob@example.com"] and d["cc"] == ["alice.chen@example.com"]
       and _sent(s)[0].title == "Re: Saturday hike"),
    Ok("reply_email", {"email_id": "mail-4", "body": "Yes!"}, lambda d, s: _sent(s)[0].cc == []),
    Ok("forward_email", {"email_id": "mail-2", "to": ["Priya"], "note": "FYI"},
       lambda d, s: _sent(s)[0].title == "Fwd: Your order order-13 has shipped"
       and _sent(s)[0].body.startswith("FYI") and "USB-C Charger" in _sent(s)[0].body),
    Ok("save_draft", {"subject": "Plan", "to": ["jordan"]},
       lambda d, s: d["to"] == ["jordan.kim@example.com"] and s.email.drafts[-1].id == "draft-8"),
    Ok("list_drafts", {}, lambda d, s: d == [{"id": "draft-7", "to": ["jordan.kim@example.com"],
                                              "subject": "Lunch next week"}]),
    Ok("send_draft", {"draft_id": "draft-7"},
       lambda d, s: not s.email.drafts and _sent(s)[0].title == "Lunch next week" and d["draft"] == "draft-7"),
    Ok("delete_draft", {"draft_id": "draft-7"}, lambda d, s: s.email.drafts == []),
    Ok("mark_email_read", {"email_id": "mail-1"}, lambda d, s: s.email.items[0].read),
    Ok("mark_email_read", {"email_id": "mail-2", "read": False}, lambda d, s: not s.email.items[1].read),
    Ok("flag_email", {"email_id": "mail-1"}, lambda d, s: s.email.items[0].flagged),
    Ok("move_email", {"email_id": "mail-3", "folder": "archive"}, lambda d, s: s.email.items[2].folder == "archive"),
    Ok("delete_email", {"email_id": "mail-5"}, lambda d, s: "mail-5" not in {m.id for m in s.email.items}),
]

FAILURES = [
    Fails("read_email", {"email_id": "mail-99"}, "not_found", message="mail-1"),
    Fails("send_email", {"to": ["Carlos"], "subject": "S", "body": "B"}, "precondition_failed", message="no email"),
    Fails("send_email", {"to": ["alice"], "subject": "S", "body": "B"}, "ambiguous"),
    Fails("send_email", {"to": ["a@b"], "subject": "S", "body": "B"}, "invalid_arguments"),
    Fails("send_email", {"to": [], "subject": "S", "body": "B"}, "invalid_arguments"),
    Fails("send_email", {"to": ["Bob", "Nobody Known"], "subject": "S", "body": "B"}, "not_found"),
    Fails("reply_email", {"email_id": "mail-6", "body": "again"}, "precondition_failed"),
    Fails("send_draft", {"draft_id": "draft-7"}, "precondition_failed", message="no recipients",
          setup=lambda s: setattr(s.email.drafts[0], "to", [])),
    Fails("delete_draft", {"draft_id": "mail-1"}, "not_found"),
    Fails("move_email", {"email_id": "mail-6", "folder": "trash"}, "precondition_failed"),
    Fails("move_email", {"email_id": "mail-1", "folder": "sent"}, "invalid_arguments"),
    Fails("list_emails", {"limit": 0}, "invalid_arguments"),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_email_tool_has_a_success() -> None:
    assert_covers("email", SUCCESSES)


async def test_sent_mail_is_findable_and_ids_are_not_reused() -> None:
    phone, ex = fresh()
    first = (await call(ex, "send_email", to=["bob@example.com"], subject="Ping", body="x")).data["id"]
    await call(ex, "delete_email", email_id=first)
    again = (await call(ex, "send_email", to=["bob@example.com"], subject="Ping", body="x")).data["id"]
    assert again != first
    found = (await call(ex, "search_emails", query="ping", folder="sent")).data
    assert [m["id"] for m in found] == [again]
