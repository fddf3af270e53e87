"""The wallet: payment cards, the peer-to-peer balance, money requests and loyalty cards."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..sections.wallet import LoyaltyCard, PaymentCard, PaymentRequest, WalletTransaction
from ._base import App
from ._payments import charge
from ._records import find, issue_id, money
from .contacts import resolve_contact

__all__ = ["WalletApp"]


def _card(c: PaymentCard) -> dict[str, Any]:
    return {"id": c.id, "name": c.name, "network": c.network, "last4": c.last4, "available": c.available,
            "frozen": c.frozen}


class WalletApp(App):
    """Manage payment cards and pay or ask people for money."""

    name = "wallet"
    domain = "shopping_payments"
    section = "wallet"
    package = "com.google.android.apps.walletnfcrel"
    label = "Wallet"

    def _card(self, card_id: str) -> PaymentCard:
        return find(self.state.wallet.cards, card_id, "card")

    @tool(effect="read", idempotent=True)
    async def list_cards(self) -> list[dict[str, Any]]:
        """List payment cards with the amount each can still spend and whether it is frozen."""
        wallet = self.state.wallet
        return [{**_card(c), "default": c.id == wallet.default_card_id} for c in wallet.cards]

    @tool(effect="read", id_arg="card_id", idempotent=True)
    async def get_card(self, card_id: str = Field(description="The card id, e.g. card-1.")) -> dict[str, Any]:
        """Read one card's details and its recent payments.

        Args:
            card_id: The card id, e.g. card-1.
        """
        wallet = self.state.wallet
        card = self._card(card_id)
        recent = [t.model_dump(mode="json") for t in wallet.transactions if t.card_id == card.id][-5:]
        return {**_card(card), "default": card.id == wallet.default_card_id, "recent": recent}

    @tool(effect="setting", setting="default_card", id_arg="card_id", idempotent=True)
    async def set_default_card(self, card_id: str = Field(description="The card id.")) -> dict[str, Any]:
        """Choose the card purchases use when none is named.

        Args:
            card_id: The card id.
        """
        card = self._card(card_id)
        if card.frozen:
            raise ToolFailure("precondition_failed", f"{card.name} is frozen; unfreeze it first")
        self.state.wallet.default_card_id = card.id
        return {"default_card": card.id, "name": card.name}

    @tool(effect="update", id_arg="card_id", idempotent=True)
    async def freeze_card(
        self, card_id: str = Field(description="The card id."), frozen: bool = True
    ) -> dict[str, Any]:
        """Freeze a card so nothing can charge it (a lost card), or unfreeze it.

        Args:
            card_id: The card id.
            frozen: False unfreezes it.
        """
        card = self._card(card_id)
        card.frozen = frozen
        return {"id": card.id, "frozen": frozen}

    @tool(effect="delete", destructive=True, id_arg="card_id", idempotent=True)
    async def remove_card(self, card_id: str = Field(description="The card id.")) -> dict[str, Any]:
        """Remove a card from the phone; adding it back needs the physical card.

        Args:
            card_id: The card id.
        """
        wallet = self.state.wallet
        card = self._card(card_id)
        wallet.cards = [c for c in wallet.cards if c.id != card.id]
        if wallet.default_card_id == card.id:
            wallet.default_card_id = None
        return {"deleted": card.id}

    @tool(effect="read", idempotent=True)
    async def get_wallet_balance(self) -> dict[str, Any]:
        """Read the peer-to-peer balance that send_money draws on."""
        wallet = self.state.wallet
        return {"balance": wallet.balance, "currency": wallet.currency}

    @tool(effect="purchase", open_world=True, idempotent=False)
    async def top_up_wallet(
        self,
        amount: float = Field(gt=0, le=1000, description="Amount to add, in the wallet currency."),
        card_id: str | None = Field(None, description="Card to charge; the default card if omitted."),
    ) -> dict[str, Any]:
        """Move money from a card into the wallet balance (the card is charged).

        Args:
            amount: Amount to add, in the wallet currency.
            card_id: Card to charge; the default card if omitted.
        """
        state = self.state
        tx = charge(state, card_id, amount, "Wallet top-up")
        wallet = state.wallet
        wallet.balance = money(wallet.balance + amount)
        return {"balance": wallet.balance, "charged_card": tx.card_id, "transaction": tx.id}

    @tool(effect="purchase", destructive=True, open_world=True, name_arg="contact", idempotent=False)
    async def send_money(
        self,
        contact: str = Field(min_length=1, max_length=80, description="Contact name or nickname."),
        amount: float = Field(gt=0, le=2000, description="Amount to send."),
        note: str = Field("", max_length=140, description="What it is for."),
    ) -> dict[str, Any]:
        """Pay a contact from the wallet balance; a payment sent cannot be taken back.

        Args:
            contact: Contact name or nickname.
            amount: Amount to send.
            note: What it is for.
        """
        state = self.state
        person = resolve_contact(state, contact)
        wallet = state.wallet
        if amount > wallet.balance + 1e-9:
            raise ToolFailure(
                "insufficient_funds",
                f"the wallet balance is {wallet.balance:.2f} {wallet.currency}; top it up to send {amount:.2f}",
            )
        wallet.balance = money(wallet.balance - amount)
        tx = WalletTransaction(id=issue_id(wallet, "tx"), name=person.name, amount=-money(amount),
                               kind="transfer_out", at=state.now)
        wallet.transactions = [*wallet.transactions, tx]
        return {"id": tx.id, "to": person.name, "amount": money(amount), "note": note, "balance": wallet.balance}

    @tool(effect="send", open_world=True, name_arg="contact", idempotent=False)
    async def request_money(
        self,
        contact: str = Field(min_length=1, max_length=80, description="Contact name or nickname."),
        amount: float = Field(gt=0, le=2000, description="Amount to ask for."),
        note: str = Field("", max_length=140, description="What it is for."),
    ) -> dict[str, Any]:
        """Ask a contact to pay you an amount (they get a request they can accept).

        Args:
            contact: Contact name or nickname.
            amount: Amount to ask for.
            note: What it is for.
        """
        state = self.state
        person = resolve_contact(state, contact)
        wallet = state.wallet
        req = PaymentRequest(id=issue_id(wallet, "req"), name=person.name, amount=money(amount), note=note)
        wallet.requests = [*wallet.requests, req]
        return req.model_dump()

    @tool(effect="update", id_arg="request_id", idempotent=True)
    async def cancel_money_request(self, request_id: str = Field(description="The request id.")) -> dict[str, Any]:
        """Withdraw a pending money request.

        Args:
            request_id: The request id.
        """
        req = find(self.state.wallet.requests, request_id, "money request")
        if req.status != "pending":
            raise ToolFailure("precondition_failed", f"{request_id} is already {req.status}")
        req.status = "cancelled"
        return {"id": req.id, "status": req.status}

    @tool(effect="read", idempotent=True)
    async def list_wallet_transactions(
        self,
        card_id: str | None = Field(None, description="Only this card's payments."),
        limit: int = Field(10, ge=1, le=50, description="Most transactions to return."),
    ) -> list[dict[str, Any]]:
        """List recent payments in and out, newest first.

        Args:
            card_id: Only this card's payments.
            limit: Most transactions to return.
        """
        items = [t for t in self.state.wallet.transactions if card_id is None or t.card_id == card_id]
        return [t.model_dump(mode="json") for t in sorted(items, key=lambda t: t.at, reverse=True)[:limit]]

    @tool(effect="create", name_arg="store", idempotent=False)
    async def add_loyalty_card(
        self,
        store: str = Field(min_length=1, max_length=60, description="The store's name."),
        number: str = Field(min_length=4, max_length=30, description="The membership number on the card."),
    ) -> dict[str, Any]:
        """Add a store's membership card so it can be shown at the till.

        Args:
            store: The store's name.
            number: The membership number on the card.
        """
        wallet = self.state.wallet
        if any(c.number == number for c in wallet.loyalty):
            raise ToolFailure("conflict", f"a loyalty card numbered {number} is already in the wallet")
        card = LoyaltyCard(id=issue_id(wallet, "loyal"), name=store, number=number)
        wallet.loyalty = [*wallet.loyalty, card]
        return card.model_dump()

    @tool(effect="read", idempotent=True)
    async def list_loyalty_cards(self) -> list[dict[str, Any]]:
        """List store membership cards with their points."""
        return [c.model_dump() for c in self.state.wallet.loyalty]

    @tool(effect="delete", destructive=True, id_arg="loyalty_id", idempotent=True)
    async def delete_loyalty_card(self, loyalty_id: str = Field(description="The loyalty card id.")) -> dict[str, Any]:
        """Remove a store membership card (its points stay with the store).

        Args:
            loyalty_id: The loyalty card id.
        """
        wallet = self.state.wallet
        find(wallet.loyalty, loyalty_id, "loyalty card")
        wallet.loyalty = [c for c in wallet.loyalty if c.id != loyalty_id]
        return {"deleted": loyalty_id}
