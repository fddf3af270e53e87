"""The greenhouse's whole state, as the verifier reads it (``model_dump(mode="json")``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class Plant(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: str
    name: str
    species: str = ""
    moisture: Annotated[float, Field(ge=0, le=100)] = 40.0
    watered_ml: int = 0


class GreenhouseState(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    plants: list[Plant] = Field(default_factory=list)
    temperature: Annotated[float, Field(ge=5, le=35)] = 21.0
    powered: bool = True
    next_id: int = 1
