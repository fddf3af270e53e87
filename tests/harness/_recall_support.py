"""The owner's memory store of the recall tests: one access policy, and the service acting for an owner.

The ``store`` fixture (``conftest.py``) opens a store under this policy; the tests write and read
through :func:`caller`, so the access checks a deployment runs apply to them too.
"""

from __future__ import annotations

from pocketpilot.memory import AccessPolicy, Caller

SERVICE, ADMIN = "recall-service-token-0123456789", "recall-admin-credential-9876543210"


def policy() -> AccessPolicy:
    """The access policy every recall test's store is opened under (a shared store's too)."""
    return AccessPolicy(SERVICE, ADMIN)


def caller(owner: str = "alice") -> Caller:
    """The service acting for ``owner``."""
    return Caller.service(SERVICE, acting_for=owner)
