"""Errors of the outside suites (public benchmarks run through pocketpilot's plug-ins).

::

    PocketPilotError
    └── SuiteError
        ├── SuiteUnavailableError (FileNotFoundError)   the suite's package cannot be fetched
        └── SuiteDataError (ContractError)               its data does not read as expected
"""

from __future__ import annotations

from ..errors import ContractError, PocketPilotError

__all__ = ["SuiteDataError", "SuiteError", "SuiteUnavailableError"]


class SuiteError(PocketPilotError):
    """Base of the errors an outside suite raises on purpose."""


class SuiteUnavailableError(SuiteError, FileNotFoundError):
    """The suite's published package is not cached and cannot be downloaded (offline, no registry).

    Tests skip on it: the suite is outside material, its absence is not a pocketpilot bug.
    """


class SuiteDataError(SuiteError, ContractError):
    """The suite's files do not hold what the adapter reads (a new release changed a format)."""
