"""The service's refinements of :mod:`pocketpilot.errors`: each carries its HTTP status and a code.

A client reads ``{"error": {"code": ..., "message": ...}}`` with one line of message; the code
is what its program branches on::

    PocketPilotError
    └── ServeError                     a request the service answers with an error
        ├── BadRequest (ValueError)       400: malformed JSON, a body that is not an object
        ├── Unauthorized (PermissionError) 401: no or a wrong bearer token
        ├── NotHolder (PermissionError)   403: a session the caller does not hold
        ├── NotFound (LookupError)        404: unknown session, question or trace
        ├── Conflict                      409: busy session, a question that is not pending
        ├── PayloadTooLarge               413: a body over the limit
        ├── Invalid (ValueError)          422: a body that does not fit the schema
        └── DeviceUnavailable             503: the session's device dropped
"""

from __future__ import annotations

from ..errors import PocketPilotError

__all__ = [
    "BadRequest",
    "Conflict",
    "DeviceUnavailable",
    "Invalid",
    "NotFound",
    "NotHolder",
    "PayloadTooLarge",
    "ServeError",
    "Unauthorized",
]


class ServeError(PocketPilotError):
    """An error the service answers with ``status`` and ``{"error": {"code", "message"}}``."""

    status = 500
    default_code = "internal_error"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(" ".join(message.split()))
        self.code = code or self.default_code

    def body(self) -> dict[str, dict[str, str]]:
        """The JSON error body."""
        return {"error": {"code": self.code, "message": str(self)}}


class BadRequest(ServeError, ValueError):
    """The body is not JSON, or not a JSON object."""

    status, default_code = 400, "malformed_json"


class Unauthorized(ServeError, PermissionError):
    """No bearer token, or the wrong one."""

    status, default_code = 401, "unauthorized"


class NotHolder(ServeError, PermissionError):
    """A session key that is not this session's: only its holder may drive or answer it."""

    status, default_code = 403, "not_holder"


class NotFound(ServeError, LookupError):
    """No such session, question or trace."""

    status, default_code = 404, "not_found"


class Conflict(ServeError):
    """The session cannot do that now (a run in progress, a question that is not pending)."""

    status, default_code = 409, "conflict"


class PayloadTooLarge(ServeError):
    """The request body is larger than the service accepts."""

    status, default_code = 413, "payload_too_large"


class Invalid(ServeError, ValueError):
    """A JSON body that does not fit the endpoint's schema."""

    status, default_code = 422, "invalid_body"


class DeviceUnavailable(ServeError):
    """The session's device dropped; its trace is kept, and a new session can reach it again."""

    status, default_code = 503, "device_lost"
