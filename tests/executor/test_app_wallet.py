"""The wallet app: cards, balance, payments to and requests from contacts, loyalty cards."""

from __future__ import annotations

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

from pocketpilot.executor.sandbox.sections.wallet import PaymentRequest

_REQ = PaymentRequest(id="req-8", name="Bob Martin", amount=12.0)

SUCCESSES = [
    Ok("list_cards", {}, lambda d, s: [(c["id"], c["default"], c["frozen"]) for c in d]
       == [("card-1", True, False), ("card-2", False, False), ("card-3", False, True)]),
    Ok("get_card", {"card_id": "card-1"}, lambda d, s: d["last4"] == "4242" and d["recent"][0]["id"] == "tx-4"),
    Ok("set_default_card", {"card_id": "card-2"}, lambda d, s: s.wallet.default_card_id == "card-2"),
    Ok("freeze_card", {"card_id": "card-1"}, lambda d, s: s.wallet.cards[0].frozen),
    Ok("freeze_card", {"card_id": "card-3", "frozen": False}, lambda d, s: not s.wallet.cards[2].frozen),
    Ok("remove_card", {"card_id": "card-1"},
       lambda d, s: [c.id for c in s.wallet.cards] == ["card-2", "card-3"] and s.wallet.default_card_id is None),
    Ok("get_wallet_balance", {}, lambda d, s: d == {"balance": 120.0, "currency": "EUR"}),
    Ok("top_up_wallet", {"amount": 30}, lambda d, s: s.wallet.balance == 150.0 and s.wallet.cards[0].available == 1820.0
       and s.wallet.transactions[-1].amount == -30.0),
    Ok("send_money", {"contact": "Bobby", "amount": 20.5, "note": "pizza"},
       lambda d, s: s.wallet.balance == 99.5 and s.wallet.transactions[-1].name == "Bob Martin"
       and s.wallet.transactions[-1].kind == "transfer_out"),
    Ok("request_money", {"contact": "Priya", "amount": 15},
       lambda d, s: s.wallet.requests[0].name == "Priya Raman" and s.wallet.requests[0].status == "pending"),
    Ok("cancel_money_request", {"request_id": "req-8"}, lambda d, s: s.wallet.requests[0].status == "cancelled",
       setup=lambda s: setattr(s.wallet, "requests", [_REQ])),
    Ok("list_wallet_transactions", {}, lambda d, s: [t["id"] for t in d] == ["tx-4", "tx-5"]),
    Ok("list_wallet_transactions", {"card_id": "card-1"}, lambda d, s: [t["id"] for t in d] == ["tx-4"]),
    Ok("add_loyalty_card", {"store": "Book Nook", "number": "BN-1"},
       lambda d, s: s.wallet.loyalty[-1].name == "Book Nook" and d["id"] == "loyal-8"),
    Ok("list_loyalty_cards", {}, lambda d, s: [c["name"] for c in d] == ["FreshMart", "City Bikes"]),
    Ok("delete_loyalty_card", {"loyalty_id": "loyal-7"}, lambda d, s: [c.id for c in s.wallet.loyalty] == ["loyal-6"]),
]

FAILURES = [
    Fails("get_card", {"card_id": "card-9"}, "not_found"),
    Fails("set_default_card", {"card_id": "card-3"}, "precondition_failed", message="frozen"),
    Fails("top_up_wallet", {"amount": 50, "card_id": "card-2"}, "insufficient_funds", message="40.00"),
    Fails("top_up_wallet", {"amount": 10, "card_id": "card-3"}, "precondition_failed", message="frozen"),
    Fails("top_up_wallet", {"amount": 10}, "precondition_failed", message="no default card",
          setup=lambda s: setattr(s.wallet, "default_card_id", None)),
    Fails("top_up_wallet", {"amount": 0}, "invalid_arguments"),
    Fails("send_money", {"contact": "Mom", "amount": 500}, "insufficient_funds", message="balance"),
    Fails("send_money", {"contact": "alice", "amount": 5}, "ambiguous"),
    Fails("cancel_money_request", {"request_id": "req-8"}, "precondition_failed",
          setup=lambda s: setattr(s.wallet, "requests", [_REQ.model_copy(update={"status": "paid"})])),
    Fails("add_loyalty_card", {"store": "FreshMart", "number": "FM-2231-88"}, "conflict"),
    Fails("delete_loyalty_card", {"loyalty_id": "card-1"}, "not_found"),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_wallet_tool_has_a_success() -> None:
    assert_covers("wallet", SUCCESSES)


async def test_a_frozen_default_card_stops_every_purchase_until_unfrozen() -> None:
    phone, ex = fresh()
    assert (await call(ex, "freeze_card", card_id="card-1")).ok
    assert (await call(ex, "top_up_wallet", amount=5)).error.code == "precondition_failed"
    assert (await call(ex, "book_trip", trip_id="trip-9")).error.code == "precondition_failed"
    assert (await call(ex, "freeze_card", card_id="card-1", frozen=False)).ok
    assert (await call(ex, "book_trip", trip_id="trip-9")).ok
    assert phone.state.wallet.cards[0].available == 1850.0 - 29.9
