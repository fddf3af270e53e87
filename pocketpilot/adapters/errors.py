"""Adapter-specific refinements of :class:`~pocketpilot.errors.ContractError`::

ContractError (ValueError)
└── EtaError                    an η file or value that cannot be used
├── EtaIntegrityError       a stored η whose content does not hash to its recorded version
└── RevisionError           a revision that fails its rule checks (stale base, bad op)
"""

from __future__ import annotations

from ..errors import ContractError

__all__ = ["EtaError", "EtaIntegrityError", "RevisionError"]


class EtaError(ContractError):
    """A harness configuration η that cannot be read, written or used."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source, self.reason = source, reason


class EtaIntegrityError(EtaError):
    """The stored content does not hash to the version recorded beside it (edited by hand?)."""


class RevisionError(EtaError):
    """A candidate revision of η broke a rule; nothing was applied."""
