"""Who may read, write, export and delete which memories.

Three kinds of caller, each proving itself with a credential on *every* call:

- **user** — a person; token ``AccessPolicy.user_token(user_id)`` (issued by whoever holds the
  admin credential). Reads, writes, exports and deletes only records it owns.
- **service** — the agent runtime acting for one user (``acting_for``) with the service token.
  Reads and writes that user's records (and the shared store); never exports or deletes.
- **admin** — the separate admin credential. Everything, across owners.

The store keeps only sha256 digests of the two secrets; comparisons are constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from ..errors import MemoryAccessError

__all__ = ["SHARED_OWNER", "AccessPolicy", "Caller", "Operation", "Role"]

Role = Literal["user", "service", "admin"]
Operation = Literal["read", "write", "delete", "export", "review"]
SHARED_OWNER = "*shared*"
"""Owner of every record in a shared agent-experience store (user ids cannot contain ``*``)."""


class Caller(BaseModel):
    """An identity plus the credential that proves it; pass one to every store call."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    principal: str = Field(min_length=1, max_length=200, pattern=r"^[^*\x00-\x1f]+$")
    token: SecretStr = Field(repr=False)
    acting_for: str | None = Field(default=None, max_length=200, pattern=r"^[^*\x00-\x1f]+$")
    """The user a service (or admin) acts for: whose records it reads and writes."""

    @classmethod
    def user(cls, user_id: str, token: str) -> Caller:
        """A user acting on their own memories."""
        return cls(role="user", principal=user_id, token=SecretStr(token))

    @classmethod
    def service(cls, token: str, acting_for: str, *, name: str = "agent") -> Caller:
        """The agent runtime acting for ``acting_for``."""
        return cls(role="service", principal=name, token=SecretStr(token), acting_for=acting_for)

    @classmethod
    def admin(cls, token: str, acting_for: str | None = None) -> Caller:
        """The administrator; ``acting_for`` picks the owner of new writes."""
        return cls(role="admin", principal="admin", token=SecretStr(token), acting_for=acting_for)

    @property
    def subject(self) -> str | None:
        """Owner whose records this caller works on (None: an admin over every owner)."""
        return self.principal if self.role == "user" else self.acting_for


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


class AccessPolicy:
    """Checks a caller's credential and its right to an operation on an owner's records."""

    def __init__(self, service_token: str, admin_token: str) -> None:
        """Keep digests of the two secrets.

        Raises:
            MemoryAccessError: Empty, short or identical secrets (a service token must not
                double as the admin credential).
        """
        if len(service_token) < 16 or len(admin_token) < 16:
            raise MemoryAccessError("service and admin tokens must be at least 16 characters")
        if hmac.compare_digest(service_token, admin_token):
            raise MemoryAccessError("the admin credential must differ from the service token")
        self._service = _digest(service_token)
        self._admin = _digest(admin_token)

    def fingerprint(self) -> str:
        """A digest of both credentials, stored in each file so a store refuses other credentials."""
        return hashlib.sha256(b"pocketpilot-access-v1" + self._service + self._admin).hexdigest()

    def ledger_key(self) -> bytes:
        """Key of the deletion ledger's digests: derived from the admin secret, never stored in a file."""
        return hmac.new(self._admin, b"pocketpilot-deletion-ledger-v1", hashlib.sha256).digest()

    def user_token(self, user_id: str) -> str:
        """The token a user proves their identity with (HMAC of the id under the admin secret)."""
        return hmac.new(self._admin, user_id.encode(), hashlib.sha256).hexdigest()

    def authenticate(self, caller: Caller) -> None:
        """Raise MemoryAccessError unless the caller's token proves its role and identity."""
        token = caller.token.get_secret_value()
        if caller.role == "user":
            ok = hmac.compare_digest(token, self.user_token(caller.principal))
        elif caller.role == "service":
            ok = hmac.compare_digest(_digest(token), self._service)
            if ok and not caller.acting_for:
                raise MemoryAccessError("a service caller must say which user it acts for")
        else:
            ok = hmac.compare_digest(_digest(token), self._admin)
        if not ok:
            raise MemoryAccessError(f"invalid credential for {caller.role} {caller.principal!r}")

    def check(self, caller: Caller, op: Operation, owner: str | None) -> None:
        """Authenticate, then allow ``op`` on records of ``owner`` (None: every owner) or raise.

        Raises:
            MemoryAccessError: Bad credential, or the role may not do ``op`` on that owner.
        """
        self.authenticate(caller)
        if caller.role == "admin":
            return
        if owner is None:
            raise MemoryAccessError(f"{caller.role} {caller.principal!r} may not {op} every owner's memories")
        if owner == SHARED_OWNER:
            # Shared agent experience: any authenticated caller reads it; only the runtime
            # writes (after redaction); users cannot delete what the agent learned.
            if op == "read" or (op == "write" and caller.role == "service"):
                return
            raise MemoryAccessError(f"{caller.role} may not {op} the shared store")
        if caller.role == "service" and op not in ("read", "write"):
            raise MemoryAccessError(f"the service token may not {op}; a user or admin must")
        if owner != caller.subject:
            raise MemoryAccessError(f"{caller.role} {caller.principal!r} may not {op} memories of another owner")
