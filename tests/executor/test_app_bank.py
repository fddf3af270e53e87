"""The bank app: accounts, transactions, transfers, payees, standing orders, budgets."""

from __future__ import annotations

import pytest
from _sandbox_cases import Fails, Ok, assert_covers, call, check_fails, check_ok, fresh

SUCCESSES = [
    Ok("list_accounts", {}, lambda d, s: [a["id"] for a in d] == ["acct-1", "acct-2", "acct-3"]),
    Ok("get_account", {"account_id": "acct-1"}, lambda d, s: d["available"] == 2640.55),
    Ok("list_bank_transactions", {"account_id": "acct-1", "limit": 2},
       lambda d, s: [t["name"] for t in d] == ["FreshMart", "Power & Light"]),
    Ok("list_bank_transactions", {"category": "dining"}, lambda d, s: [t["amount"] for t in d] == [-48.0, -36.5]),
    Ok("get_spending_summary", {"month": "2025-03"},
       lambda d, s: d["by_category"]["groceries"] == 85.45 and d["by_category"]["dining"] == 84.5
       and "income" not in d["by_category"] and d["total"] == 1150 + 62.35 + 48 + 86 + 23.1 + 74.9 + 29.99 + 36.5),
    Ok("transfer_between_accounts", {"from_account_id": "acct-1", "to_account_id": "acct-2", "amount": 100},
       lambda d, s: s.bank.accounts[0].balance == 2040.55 and s.bank.accounts[1].balance == 8700.0
       and [t.category for t in s.bank.transactions[-2:]] == ["transfer", "transfer"]),
    Ok("pay_payee", {"payee_id": "payee-16", "amount": 74.9, "reference": "INV-7"},
       lambda d, s: s.bank.accounts[0].balance == 2065.65 and s.bank.transactions[-1].reference == "INV-7"),
    Ok("pay_payee", {"payee_id": "payee-17", "amount": 2600},  # into the overdraft
       lambda d, s: s.bank.accounts[0].balance == -459.45),
    Ok("list_payees", {}, lambda d, s: [p["name"] for p in d] == ["City Properties", "Power & Light", "Alice Chen"]),
    Ok("add_payee", {"name": "Sam Taylor", "iban": "de75 5121 0800 1245 1261 99"},
       lambda d, s: s.bank.payees[-1].iban == "DE75512108001245126199" and d["id"] == "payee-21"),
    Ok("delete_payee", {"payee_id": "payee-17"}, lambda d, s: len(s.bank.payees) == 2),
    Ok("schedule_transfer", {"payee_id": "payee-16", "amount": 75, "day": 3},
       lambda d, s: s.bank.standing_orders[-1].day == 3 and s.bank.standing_orders[-1].name == "Power & Light"),
    Ok("list_standing_orders", {}, lambda d, s: [o["id"] for o in d] == ["standing-18"]),
    Ok("cancel_standing_order", {"standing_id": "standing-18"}, lambda d, s: not s.bank.standing_orders[0].active),
    Ok("set_budget", {"category": "dining", "monthly_limit": 200},
       lambda d, s: s.bank.budgets[0].monthly_limit == 200 and len(s.bank.budgets) == 2),
    Ok("set_budget", {"category": "transport", "monthly_limit": 100},
       lambda d, s: s.bank.budgets[-1].name == "transport" and s.bank.budgets[-1].id == "budget-21"),
    Ok("get_budget_status", {}, lambda d, s: [(b["category"], b["spent"], b["over"]) for b in d]
       == [("dining", 84.5, False), ("groceries", 85.45, False)]),
    Ok("get_budget_status", {"month": "2025-02"}, lambda d, s: d[1]["spent"] == 55.4),
]

FAILURES = [
    Fails("get_account", {"account_id": "acct-9"}, "not_found"),
    Fails("list_bank_transactions", {"account_id": "acct-9"}, "not_found"),
    Fails("get_spending_summary", {"month": "2025-13"}, "invalid_arguments"),
    Fails("transfer_between_accounts", {"from_account_id": "acct-2", "to_account_id": "acct-1", "amount": 9000},
          "insufficient_funds", message="8600.00"),
    Fails("transfer_between_accounts", {"from_account_id": "acct-1", "to_account_id": "acct-1", "amount": 1},
          "invalid_arguments"),
    Fails("pay_payee", {"payee_id": "payee-16", "amount": 2700}, "insufficient_funds"),
    Fails("pay_payee", {"payee_id": "payee-99", "amount": 1}, "not_found"),
    Fails("add_payee", {"name": "X", "iban": "NOT-AN-IBAN-123"}, "invalid_arguments"),
    Fails("add_payee", {"name": "Landlord", "iban": "DE12500105170648489890"}, "conflict"),
    Fails("delete_payee", {"payee_id": "payee-15"}, "precondition_failed", message="standing order"),
    Fails("schedule_transfer", {"payee_id": "payee-16", "amount": 75, "day": 31}, "invalid_arguments"),
    Fails("cancel_standing_order", {"standing_id": "standing-18"}, "precondition_failed",
          setup=lambda s: setattr(s.bank.standing_orders[0], "active", False)),
    Fails("set_budget", {"category": "pets", "monthly_limit": 10}, "invalid_arguments"),
]


@pytest.mark.parametrize("case", SUCCESSES, ids=str)
async def test_success(case: Ok) -> None:
    await check_ok(case)


@pytest.mark.parametrize("case", FAILURES, ids=str)
async def test_failure(case: Fails) -> None:
    await check_fails(case)


def test_every_bank_tool_has_a_success() -> None:
    assert_covers("bank", SUCCESSES)


async def test_spending_shows_up_in_the_budget() -> None:
    phone, ex = fresh()
    before = {b["category"]: b for b in (await call(ex, "get_budget_status")).data}
    # an own-account transfer is not spending; a payment is (it books as bills)
    await call(ex, "transfer_between_accounts", from_account_id="acct-1", to_account_id="acct-2", amount=500)
    await call(ex, "set_budget", category="bills", monthly_limit=1000)
    status = {b["category"]: b for b in (await call(ex, "get_budget_status")).data}
    assert status["dining"] == before["dining"]
    assert status["bills"]["spent"] == 1150 + 74.9 and status["bills"]["over"] is True
