"""The greenhouse app: a class built as ``GreenhouseApp(state)`` whose ``@tool`` methods act on it."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from pocketpilot.errors import ToolFailure
from pocketpilot.executor.tools import tool

from .state import GreenhouseState, Plant


class GreenhouseApp:
    name = "greenhouse"

    def __init__(self, state: GreenhouseState) -> None:
        self._state = state

    @property
    def state(self) -> GreenhouseState:
        if not self._state.powered:
            raise ToolFailure("greenhouse_off", "the greenhouse is shut down")
        return self._state

    def _find(self, plant_id: str) -> Plant:
        for plant in self.state.plants:
            if plant.id == plant_id:
                return plant
        raise ToolFailure("not_found", f"no plant {plant_id!r}")

    @tool(effect="read")
    def list_plants(self) -> list[dict[str, Any]]:
        """List the plants (id, name, species, moisture)."""
        return [p.model_dump(include={"id", "name", "species", "moisture"}) for p in self.state.plants]

    @tool(effect="create", name_arg="name", idempotent=False)
    def add_plant(self, name: str = Field(min_length=1), species: str = "") -> dict[str, Any]:
        """Add a plant and return its id.

        Args:
            name: What the plant is called.
            species: Its species.
        """
        state = self.state
        plant = Plant(id=f"p{state.next_id}", name=name, species=species)
        state.plants = [*state.plants, plant]
        state.next_id += 1
        return {"id": plant.id}

    @tool(effect="update", id_arg="plant_id", idempotent=False)
    def water_plant(self, plant_id: str, ml: int = Field(gt=0, le=2000)) -> dict[str, Any]:
        """Water one plant.

        Args:
            plant_id: The plant's id, e.g. p1.
            ml: How much water, in millilitres.
        """
        plant = self._find(plant_id)
        plant.watered_ml += ml
        plant.moisture = min(100.0, plant.moisture + ml / 10)
        return {"id": plant.id, "moisture": plant.moisture}

    @tool(effect="delete", destructive=True, id_arg="plant_id")
    def remove_plant(self, plant_id: str) -> dict[str, Any]:
        """Remove a plant.

        Args:
            plant_id: The plant's id.
        """
        plant = self._find(plant_id)
        self.state.plants = [p for p in self.state.plants if p.id != plant.id]
        return {"removed": plant.id}

    @tool(effect="setting", setting="temperature", idempotent=True)
    def set_temperature(self, celsius: float = Field(ge=5, le=35)) -> dict[str, Any]:
        """Set the thermostat.

        Args:
            celsius: Target temperature.
        """
        self.state.temperature = celsius
        return {"temperature": celsius}

    @tool(effect="update", destructive=True, idempotent=True)
    def shutdown(self) -> dict[str, Any]:
        """Shut the greenhouse down; nothing works afterwards."""
        self.state.powered = False
        return {"powered": False}
