"""Charging and refunding the wallet's cards: the one path by which apps spend money.

A charge checks everything before it changes anything, so a purchase that fails
(``precondition_failed`` for a frozen or missing card, ``insufficient_funds``) leaves the world
as it was; callers run their own checks first and charge last.
"""

from __future__ import annotations

from ....errors import ToolFailure
from ..sections.wallet import PaymentCard, WalletTransaction
from ..state import PhoneState
from ._records import find, issue_id, money

__all__ = ["charge", "payable_card", "refund"]


def payable_card(state: PhoneState, card_id: str | None, amount: float) -> PaymentCard:
    """The card that would pay ``amount`` (the default when ``card_id`` is None), checked."""
    wallet = state.wallet
    chosen = card_id or wallet.default_card_id
    if chosen is None:
        raise ToolFailure("precondition_failed", "no payment card given and no default card is set")
    card = find(wallet.cards, chosen, "card")
    if card.frozen:
        raise ToolFailure("precondition_failed", f"{card.name} is frozen; unfreeze it or pay with another card")
    if amount > card.available + 1e-9:
        raise ToolFailure(
            "insufficient_funds",
            f"{card.name} has {card.available:.2f} {wallet.currency} available; {amount:.2f} needed",
        )
    return card


def charge(state: PhoneState, card_id: str | None, amount: float, merchant: str) -> WalletTransaction:
    """Take ``amount`` from a card and record it; fails before any change."""
    card = payable_card(state, card_id, amount)
    wallet = state.wallet
    card.available = money(card.available - amount)
    tx = WalletTransaction(id=issue_id(wallet, "tx"), name=merchant, amount=-money(amount), kind="purchase",
                           card_id=card.id, at=state.now)
    wallet.transactions = [*wallet.transactions, tx]
    return tx


def refund(state: PhoneState, card_id: str, amount: float, merchant: str) -> WalletTransaction:
    """Give ``amount`` back to the card that paid (a removed card's refund goes to the balance)."""
    wallet = state.wallet
    card = next((c for c in wallet.cards if c.id == card_id), None)
    if card is not None:
        card.available = money(card.available + amount)
    else:
        wallet.balance = money(wallet.balance + amount)
    tx = WalletTransaction(id=issue_id(wallet, "tx"), name=merchant, amount=money(amount), kind="refund",
                           card_id=card.id if card else None, at=state.now)
    wallet.transactions = [*wallet.transactions, tx]
    return tx
