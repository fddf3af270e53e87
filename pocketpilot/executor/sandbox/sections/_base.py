"""The base every state section shares (same contract as ``state._State``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Section"]


class Section(BaseModel):
    # Mutable on purpose (tools change it); every assignment validated, no stray fields.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
