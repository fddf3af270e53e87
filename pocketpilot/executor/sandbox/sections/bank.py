"""The banking app: accounts, their transactions, payees, standing orders and budgets."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import Field

from ._base import Section

__all__ = [
    "Account",
    "BankState",
    "BankTransaction",
    "Budget",
    "Category",
    "Payee",
    "StandingOrder",
    "default_bank",
]

Category = Literal["groceries", "dining", "transport", "shopping", "bills", "income", "transfer", "other"]
IBAN = r"^[A-Z]{2}\d{2}[A-Z0-9]{10,30}$"


class Account(Section):
    """A bank account; a credit account's balance is negative when money is owed."""

    id: str
    name: str
    kind: Literal["checking", "savings", "credit"]
    iban: str = Field(pattern=IBAN)
    balance: float
    overdraft: Annotated[float, Field(ge=0)] = 0.0
    """How far below zero the balance may go."""


class BankTransaction(Section):
    """Money in (positive) or out (negative) of one account; ``name`` is the counterparty."""

    id: str
    account_id: str
    name: str
    amount: float
    category: Category
    at: datetime
    reference: str = ""


class Payee(Section):
    """Someone the user pays by bank transfer."""

    id: str
    name: str
    iban: str = Field(pattern=IBAN)


class StandingOrder(Section):
    """A monthly transfer to a payee on ``day`` of each month."""

    id: str
    name: str
    """The payee's name."""
    payee_id: str
    account_id: str
    amount: Annotated[float, Field(gt=0)]
    day: Annotated[int, Field(ge=1, le=28)]
    active: bool = True


class Budget(Section):
    """A monthly spending limit for one category (``name``)."""

    id: str
    name: Category
    monthly_limit: Annotated[float, Field(gt=0)]


class BankState(Section):
    """Accounts and everything that moves money between them and others."""

    accounts: list[Account] = Field(default_factory=list)
    transactions: list[BankTransaction] = Field(default_factory=list)
    payees: list[Payee] = Field(default_factory=list)
    standing_orders: list[StandingOrder] = Field(default_factory=list)
    budgets: list[Budget] = Field(default_factory=list)
    currency: str = "EUR"
    next_id: int = 1


_TX = [
    # account, counterparty, amount, category, days ago
    ("acct-1", "Northwind GmbH", 3200.0, "income", 13),
    ("acct-1", "City Properties", -1150.0, "bills", 12),
    ("acct-1", "FreshMart", -62.35, "groceries", 6),
    ("acct-1", "Trattoria Sole", -48.0, "dining", 4),
    ("acct-1", "Metro Transit", -86.0, "transport", 10),
    ("acct-1", "FreshMart", -23.1, "groceries", 1),
    ("acct-1", "Power & Light", -74.9, "bills", 3),
    ("acct-3", "ShopMart", -29.99, "shopping", 2),
    ("acct-3", "Green Leaf Bistro", -36.5, "dining", 8),
    ("acct-1", "FreshMart", -55.4, "groceries", 20),
    ("acct-1", "Northwind GmbH", 3200.0, "income", 41),
]


def default_bank(now: datetime) -> BankState:
    """Checking, savings and a credit card account; a month of transactions; two budgets."""
    txs = [
        BankTransaction(id=f"btx-{i}", account_id=a, name=n, amount=amt, category=c, at=now - timedelta(days=d))  # type: ignore[arg-type]
        for i, (a, n, amt, c, d) in enumerate(_TX, start=4)
    ]
    return BankState(
        accounts=[
            Account(id="acct-1", name="Everyday Checking", kind="checking", iban="DE89370400440532013000",
                    balance=2140.55, overdraft=500.0),
            Account(id="acct-2", name="Rainy Day Savings", kind="savings", iban="DE02120300000000202051",
                    balance=8600.0),
            Account(id="acct-3", name="Credit Card", kind="credit", iban="DE44500105175407324931",
                    balance=-66.49, overdraft=3000.0),
        ],
        transactions=txs,
        payees=[
            Payee(id="payee-15", name="City Properties", iban="DE12500105170648489890"),
            Payee(id="payee-16", name="Power & Light", iban="DE27100777770209299700"),
            Payee(id="payee-17", name="Alice Chen", iban="FR1420041010050500013M02606"),
        ],
        standing_orders=[
            StandingOrder(id="standing-18", name="City Properties", payee_id="payee-15", account_id="acct-1",
                          amount=1150.0, day=1),
        ],
        budgets=[
            Budget(id="budget-19", name="dining", monthly_limit=150.0),
            Budget(id="budget-20", name="groceries", monthly_limit=300.0),
        ],
        next_id=21,
    )
