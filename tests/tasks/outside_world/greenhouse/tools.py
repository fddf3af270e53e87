"""Tools that are not an app class: a ``@tool`` function, and a factory that builds tools over the state."""

from __future__ import annotations

from typing import Any

from pocketpilot.errors import ToolFailure
from pocketpilot.executor.tools import Tool, tool

from .state import GreenhouseState

_CARE = {"fern": "keep moist, shade", "basil": "sun, water when dry", "cactus": "sun, water rarely"}


@tool(effect="read", open_world=True)
def lookup_species(name: str) -> dict[str, Any]:
    """Look up how to care for a species.

    Args:
        name: The species, e.g. fern.
    """
    care = _CARE.get(name.strip().lower())
    if care is None:
        raise ToolFailure("unknown_species", f"no care sheet for {name!r}")
    return {"species": name, "care": care}


def make_sensors(state: GreenhouseState) -> list[Tool]:
    """The moisture sensor, reading the live state it is built over."""

    def read_moisture(plant_id: str) -> dict[str, Any]:
        """Read one plant's soil moisture (percent).

        Args:
            plant_id: The plant's id.
        """
        for plant in state.plants:
            if plant.id == plant_id:
                return {"id": plant_id, "moisture": plant.moisture}
        raise ToolFailure("not_found", f"no plant {plant_id!r}")

    return [Tool(read_moisture, effect="read")]
