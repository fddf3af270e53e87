"""Memory-specific refinements of the errors in :mod:`pocketpilot.errors`.

They subclass the project's memory errors, so ``except MemoryStoreError`` still catches them::

    MemoryStoreError
    ├── MemoryContentError (ValueError)   empty, oversized or binary content / bad input
    ├── EmbedderUnavailableError          the ONNX embedder has not been built or is invalid
    └── MemorySchemaError
        └── MemoryFileError               the file is not a pocketpilot store or is corrupt
"""

from __future__ import annotations

from ..errors import MemorySchemaError, MemoryStoreError

__all__ = ["EmbedderUnavailableError", "MemoryContentError", "MemoryFileError"]


class MemoryContentError(MemoryStoreError, ValueError):
    """Content or a query argument the store refuses (empty, oversized, binary, bad field)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EmbedderUnavailableError(MemoryStoreError):
    """The default embedder is not built (run ``python -m pocketpilot.memory.build_embedder``)."""


class MemoryFileError(MemorySchemaError):
    """The file is not a pocketpilot memory store, or SQLite reports it corrupt."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason
