"""Errors of checkpoint import, gating, the version registry and swaps.

They hang off the package's root tree so the CLI maps every one to a one-line message::

    PocketPilotError
    └── ModelStoreError
        ├── ModelIntegrityError
        │   └── CheckpointIntegrityError   truncated, corrupt or tampered file (sha256 mismatch)
        └── CheckpointError
            ├── CheckpointMismatchError    architecture / tokenizer / tensor shape vs the base
            ├── GateFailedError            the parity or dev-set gate said no
            ├── PromotionRefusedError      a gate did not run or did not pass, and no --force reason
            ├── QuantizeError              llama.cpp quantization failed
            └── RegistryError              unknown version, nothing to roll back, bad registry file
"""

from __future__ import annotations

from ...errors import ModelIntegrityError, ModelStoreError

__all__ = [
    "CheckpointError",
    "CheckpointIntegrityError",
    "CheckpointMismatchError",
    "GateFailedError",
    "PromotionRefusedError",
    "QuantizeError",
    "RegistryError",
]


class CheckpointIntegrityError(ModelIntegrityError):
    """The file is not a whole, untampered GGUF (bad magic, truncated, sha256 mismatch)."""


class CheckpointError(ModelStoreError):
    """A checkpoint could not be imported, gated, registered or swapped in."""


class CheckpointMismatchError(CheckpointError):
    """The checkpoint does not fit the base (architecture, tokenizer, tensor shapes)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: does not match the base: {reason}")
        self.path, self.reason = path, reason


class GateFailedError(CheckpointError):
    """A gate rejected the candidate; ``report`` holds the measured figures."""

    def __init__(self, gate: str, reason: str, report: object = None) -> None:
        super().__init__(f"{gate} gate failed: {reason}")
        self.gate, self.reason, self.report = gate, reason, report


class PromotionRefusedError(CheckpointError):
    """The version may not serve: a gate did not run or did not pass, and no reason forced it.

    Unlike :class:`GateFailedError` nothing measured a regression, so the version stays a
    ``candidate`` and can be promoted once its gates pass (or with a recorded reason).
    """

    def __init__(self, version_id: str, blockers: list[str]) -> None:
        super().__init__(
            f"{version_id} is not promoted ({'; '.join(blockers)}): run the gates, or give --force --reason TEXT"
        )
        self.version_id, self.blockers = version_id, blockers


class QuantizeError(CheckpointError):
    """llama.cpp could not quantize the file (no partial output is left behind)."""


class RegistryError(CheckpointError):
    """The version registry cannot do what was asked (unknown version, nothing to roll back)."""
