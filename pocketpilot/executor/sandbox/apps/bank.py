"""Banking: balances, transactions, transfers, payees, standing orders and monthly budgets."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..sections.bank import IBAN, Account, BankTransaction, Budget, Category, Payee, StandingOrder
from ._base import App
from ._records import find, issue_id, money

__all__ = ["BankApp"]

_MONTH = r"^\d{4}-(0[1-9]|1[0-2])$"


class BankApp(App):
    """One bank's accounts and the money moving through them."""

    name = "bank"
    domain = "finance"
    section = "bank"
    package = "com.pocketpilot.bank"
    label = "Bank"

    def _account(self, account_id: str) -> Account:
        return find(self.state.bank.accounts, account_id, "account")

    def _debit(self, account: Account, amount: float, name: str, category: Category, reference: str = "") -> BankTransaction:
        """Take money out of an account, within its overdraft; fails before any change."""
        if account.balance - amount < -account.overdraft - 1e-9:
            raise ToolFailure(
                "insufficient_funds",
                f"{account.name} has {account.balance:.2f} (overdraft {account.overdraft:.2f}); {amount:.2f} needed",
            )
        return self._book(account, -amount, name, category, reference)

    def _book(self, account: Account, amount: float, name: str, category: Category, reference: str = "") -> BankTransaction:
        bank = self.state.bank
        account.balance = money(account.balance + amount)
        tx = BankTransaction(id=issue_id(bank, "btx"), account_id=account.id, name=name, amount=money(amount),
                             category=category, at=self.state.now, reference=reference)
        bank.transactions = [*bank.transactions, tx]
        return tx

    def _spent(self, month: str) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for t in self.state.bank.transactions:
            if t.amount < 0 and t.at.strftime("%Y-%m") == month and t.category != "transfer":
                out[t.category] = money(out[t.category] - t.amount)
        return dict(out)

    @tool(effect="read", idempotent=True)
    async def list_accounts(self) -> list[dict[str, Any]]:
        """List accounts with their balances (a credit account is negative when money is owed)."""
        return [a.model_dump() for a in self.state.bank.accounts]

    @tool(effect="read", id_arg="account_id", idempotent=True)
    async def get_account(self, account_id: str = Field(description="The account id, e.g. acct-1.")) -> dict[str, Any]:
        """Read one account: balance, overdraft and IBAN, with the money it can still pay out.

        Args:
            account_id: The account id, e.g. acct-1.
        """
        account = self._account(account_id)
        return {**account.model_dump(), "available": money(account.balance + account.overdraft)}

    @tool(effect="read", idempotent=True)
    async def list_bank_transactions(
        self,
        account_id: str | None = Field(None, description="Only this account; all accounts if omitted."),
        category: Category | None = None,
        limit: int = Field(10, ge=1, le=100, description="Most transactions to return."),
    ) -> list[dict[str, Any]]:
        """List transactions, newest first, to find a payment or check what came in.

        Args:
            account_id: Only this account; all accounts if omitted.
            category: Only this spending category.
            limit: Most transactions to return.
        """
        if account_id is not None:
            self._account(account_id)
        items = [t for t in self.state.bank.transactions
                 if account_id in (None, t.account_id) and category in (None, t.category)]
        return [t.model_dump(mode="json") for t in sorted(items, key=lambda t: t.at, reverse=True)[:limit]]

    @tool(effect="read", idempotent=True)
    async def get_spending_summary(
        self, month: str = Field(pattern=_MONTH, description="YYYY-MM, e.g. 2025-03.")
    ) -> dict[str, Any]:
        """Total money spent in a month per category (transfers between own accounts excluded).

        Args:
            month: YYYY-MM, e.g. 2025-03.
        """
        spent = self._spent(month)
        return {"month": month, "by_category": spent, "total": money(sum(spent.values()))}

    @tool(effect="update", id_arg="from_account_id", idempotent=False)
    async def transfer_between_accounts(
        self,
        from_account_id: str = Field(description="Account the money leaves."),
        to_account_id: str = Field(description="Account the money goes to."),
        amount: float = Field(gt=0, le=50000, description="Amount to move."),
    ) -> dict[str, Any]:
        """Move money between the user's own accounts (say, into savings).

        Args:
            from_account_id: Account the money leaves.
            to_account_id: Account the money goes to.
            amount: Amount to move.
        """
        src, dst = self._account(from_account_id), self._account(to_account_id)
        if src.id == dst.id:
            raise ToolFailure("invalid_arguments", "the two accounts must differ")
        self._debit(src, amount, dst.name, "transfer")
        self._book(dst, amount, src.name, "transfer")
        return {"from": {"id": src.id, "balance": src.balance}, "to": {"id": dst.id, "balance": dst.balance}}

    @tool(effect="purchase", destructive=True, open_world=True, id_arg="payee_id", idempotent=False)
    async def pay_payee(
        self,
        payee_id: str = Field(description="The payee id, e.g. payee-16."),
        amount: float = Field(gt=0, le=20000, description="Amount to pay."),
        from_account_id: str = Field("acct-1", description="Account to pay from."),
        reference: str = Field("", max_length=140, description="Reference the payee sees, e.g. an invoice number."),
    ) -> dict[str, Any]:
        """Pay a saved payee by bank transfer now; a sent transfer cannot be recalled.

        Args:
            payee_id: The payee id, e.g. payee-16.
            amount: Amount to pay.
            from_account_id: Account to pay from.
            reference: Reference the payee sees, e.g. an invoice number.
        """
        payee = find(self.state.bank.payees, payee_id, "payee")
        account = self._account(from_account_id)
        tx = self._debit(account, amount, payee.name, "bills", reference)
        return {"id": tx.id, "to": payee.name, "amount": money(amount), "balance": account.balance}

    @tool(effect="read", idempotent=True)
    async def list_payees(self) -> list[dict[str, Any]]:
        """List saved payees (id, name, IBAN)."""
        return [p.model_dump() for p in self.state.bank.payees]

    @tool(effect="create", name_arg="name", idempotent=False)
    async def add_payee(
        self,
        name: str = Field(min_length=1, max_length=80, description="Who they are."),
        iban: str = Field(min_length=15, max_length=34, description="Their IBAN, e.g. DE89370400440532013000."),
    ) -> dict[str, Any]:
        """Save someone to pay by transfer.

        Args:
            name: Who they are.
            iban: Their IBAN, e.g. DE89370400440532013000.
        """
        bank = self.state.bank
        clean = iban.replace(" ", "").upper()
        if not re.match(IBAN, clean):
            raise ToolFailure("invalid_arguments", f"{iban!r} is not an IBAN")
        if any(p.iban == clean for p in bank.payees):
            raise ToolFailure("conflict", f"a payee with IBAN {clean} already exists")
        payee = Payee(id=issue_id(bank, "payee"), name=name, iban=clean)
        bank.payees = [*bank.payees, payee]
        return payee.model_dump()

    @tool(effect="delete", destructive=True, id_arg="payee_id", idempotent=True)
    async def delete_payee(self, payee_id: str = Field(description="The payee id.")) -> dict[str, Any]:
        """Remove a saved payee (cancel their standing orders first).

        Args:
            payee_id: The payee id.
        """
        bank = self.state.bank
        payee = find(bank.payees, payee_id, "payee")
        if any(s.payee_id == payee.id and s.active for s in bank.standing_orders):
            raise ToolFailure("precondition_failed", f"{payee.name} has an active standing order; cancel it first")
        bank.payees = [p for p in bank.payees if p.id != payee.id]
        return {"deleted": payee.id}

    @tool(effect="purchase", open_world=True, id_arg="payee_id", idempotent=False)
    async def schedule_transfer(
        self,
        payee_id: str = Field(description="The payee id."),
        amount: float = Field(gt=0, le=20000, description="Amount each month."),
        day: int = Field(ge=1, le=28, description="Day of the month it goes out."),
        from_account_id: str = Field("acct-1", description="Account to pay from."),
    ) -> dict[str, Any]:
        """Set up a standing order: the amount goes to the payee every month on that day.

        Args:
            payee_id: The payee id.
            amount: Amount each month.
            day: Day of the month it goes out.
            from_account_id: Account to pay from.
        """
        bank = self.state.bank
        payee = find(bank.payees, payee_id, "payee")
        account = self._account(from_account_id)
        order = StandingOrder(id=issue_id(bank, "standing"), name=payee.name, payee_id=payee.id,
                              account_id=account.id, amount=money(amount), day=day)
        bank.standing_orders = [*bank.standing_orders, order]
        return order.model_dump()

    @tool(effect="read", idempotent=True)
    async def list_standing_orders(self, include_cancelled: bool = False) -> list[dict[str, Any]]:
        """List monthly standing orders.

        Args:
            include_cancelled: Also list cancelled ones.
        """
        return [s.model_dump() for s in self.state.bank.standing_orders if s.active or include_cancelled]

    @tool(effect="delete", destructive=True, id_arg="standing_id", idempotent=True)
    async def cancel_standing_order(self, standing_id: str = Field(description="The standing order id.")) -> dict[str, Any]:
        """Stop a standing order; no further payments go out.

        Args:
            standing_id: The standing order id.
        """
        order = find(self.state.bank.standing_orders, standing_id, "standing order")
        if not order.active:
            raise ToolFailure("precondition_failed", f"{standing_id} is already cancelled")
        order.active = False
        return {"id": order.id, "active": False}

    @tool(effect="update", name_arg="category", idempotent=True)
    async def set_budget(
        self,
        category: Category = Field(description="The spending category."),
        monthly_limit: float = Field(gt=0, le=100000, description="Most to spend on it per month."),
    ) -> dict[str, Any]:
        """Set (or change) the monthly spending limit of a category.

        Args:
            category: The spending category.
            monthly_limit: Most to spend on it per month.
        """
        bank = self.state.bank
        budget = next((b for b in bank.budgets if b.name == category), None)
        if budget is None:
            budget = Budget(id=issue_id(bank, "budget"), name=category, monthly_limit=monthly_limit)
            bank.budgets = [*bank.budgets, budget]
        else:
            budget.monthly_limit = monthly_limit
        return budget.model_dump()

    @tool(effect="read", idempotent=True)
    async def get_budget_status(
        self, month: str | None = Field(None, pattern=_MONTH, description="YYYY-MM; this month if omitted.")
    ) -> list[dict[str, Any]]:
        """Compare each budget's limit with what was spent in a month.

        Args:
            month: YYYY-MM; this month if omitted.
        """
        month = month or self.state.now.strftime("%Y-%m")
        spent = self._spent(month)
        rows = []
        for b in self.state.bank.budgets:
            used = spent.get(b.name, 0.0)
            rows.append({"id": b.id, "category": b.name, "limit": b.monthly_limit, "spent": used,
                         "left": money(b.monthly_limit - used), "over": used > b.monthly_limit})
        return rows
