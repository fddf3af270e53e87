"""The wallet: payment cards every shop and booking app charges, a balance, loyalty cards."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import Field

from ._base import Section

__all__ = [
    "LoyaltyCard",
    "PaymentCard",
    "PaymentRequest",
    "WalletState",
    "WalletTransaction",
    "default_wallet",
]

Amount = Annotated[float, Field(ge=0)]


class PaymentCard(Section):
    """A card; ``available`` is the credit (or debit balance) left to spend."""

    id: str
    name: str
    network: Literal["visa", "mastercard", "amex"]
    last4: str = Field(pattern=r"^\d{4}$")
    available: Amount
    frozen: bool = False


class WalletTransaction(Section):
    """Money in (positive) or out (negative); ``name`` is the merchant or person."""

    id: str
    name: str
    amount: float
    kind: Literal["purchase", "refund", "transfer_out", "transfer_in", "top_up"]
    card_id: str | None = None
    """The card charged or refunded; None for the wallet balance."""
    at: datetime


class PaymentRequest(Section):
    """Money the user asked a contact for."""

    id: str
    name: str
    amount: Amount
    note: str = ""
    status: Literal["pending", "paid", "cancelled"] = "pending"


class LoyaltyCard(Section):
    """A store's membership card."""

    id: str
    name: str
    """The store."""
    number: str
    points: int = 0


class WalletState(Section):
    """Cards, the default card, the peer-to-peer balance and the history of payments."""

    cards: list[PaymentCard] = Field(default_factory=list)
    default_card_id: str | None = None
    balance: Amount = 0.0
    """Peer-to-peer balance (send_money draws on it)."""
    currency: str = "EUR"
    transactions: list[WalletTransaction] = Field(default_factory=list)
    requests: list[PaymentRequest] = Field(default_factory=list)
    loyalty: list[LoyaltyCard] = Field(default_factory=list)
    next_id: int = 1


def default_wallet(now: datetime) -> WalletState:
    """Three cards (one frozen, one nearly maxed), a small balance and two store cards."""
    return WalletState(
        cards=[
            PaymentCard(id="card-1", name="Everyday Visa", network="visa", last4="4242", available=1850.0),
            PaymentCard(id="card-2", name="Travel Mastercard", network="mastercard", last4="5454", available=40.0),
            PaymentCard(id="card-3", name="Old Amex", network="amex", last4="0005", available=900.0, frozen=True),
        ],
        default_card_id="card-1",
        balance=120.0,
        transactions=[
            WalletTransaction(id="tx-4", name="Corner Bean Cafe", amount=-4.2, kind="purchase", card_id="card-1",
                              at=now - timedelta(hours=26)),
            WalletTransaction(id="tx-5", name="Bob Martin", amount=25.0, kind="transfer_in",
                              at=now - timedelta(days=2)),
        ],
        loyalty=[
            LoyaltyCard(id="loyal-6", name="FreshMart", number="FM-2231-88", points=340),
            LoyaltyCard(id="loyal-7", name="City Bikes", number="CB-0098", points=55),
        ],
        next_id=8,
    )
