"""A small carrier world that a bundled task brings: mobile data, roaming and the access point.

It is the pattern a team's phone world runs into (issue 34): the fix a request needs is a
declared ``setting`` change that the request does not name, and the run finds it out by a read
first ("nothing loads" → read the access point → reset it). The harness must let that path
through while still holding a settings walk; the task that uses this world keeps it honest.

Tools (declared semantics only; no policy reads their names):

- ``get_data_status`` (read): mobile data, roaming, whether pages load;
- ``set_mobile_data`` (setting ``mobile_data``), ``set_roaming`` (setting ``roaming``);
- ``get_apn_settings`` (read): the access point the phone uses, and whether the carrier accepts it;
- ``reset_apn_settings`` (setting ``apn``): back to the carrier's shipped access point.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..executor.tools import tool

__all__ = ["CARRIER_APN", "AccessPoint", "CarrierApp", "CarrierState"]

CARRIER_APN = "internet"
"""The access point name the carrier ships and accepts."""


# The phone's mobile-data access point settings, as the carrier checks them (a comment, not a
# docstring: pydantic would carry a docstring into the state's JSON schema).
class AccessPoint(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    name: str = CARRIER_APN
    mmsc: str = "http://mms.carrier.example"
    proxy: str = ""


class CarrierState(BaseModel):
    """The phone's carrier side, as the verifier reads it."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    mobile_data: bool = True
    roaming: bool = False
    apn: AccessPoint = Field(default_factory=AccessPoint)


class CarrierApp:
    """Carrier settings over a :class:`CarrierState` (built as ``CarrierApp(state)``)."""

    name = "carrier"

    def __init__(self, state: CarrierState) -> None:
        self.state = state

    def _loads(self) -> bool:
        return self.state.mobile_data and self.state.apn.name == CARRIER_APN

    @tool(effect="read")
    def get_data_status(self) -> dict[str, Any]:
        """Show mobile data, roaming, and whether pages load over the cellular network."""
        return {"mobile_data": self.state.mobile_data, "roaming": self.state.roaming, "pages_load": self._loads()}

    @tool(effect="setting", setting="mobile_data", idempotent=True)
    def set_mobile_data(self, enabled: bool) -> dict[str, Any]:
        """Turn mobile data on or off.

        Args:
            enabled: True turns mobile data on.
        """
        self.state.mobile_data = enabled
        return {"mobile_data": enabled}

    @tool(effect="setting", setting="roaming", idempotent=True)
    def set_roaming(self, enabled: bool) -> dict[str, Any]:
        """Allow or forbid roaming on other networks abroad.

        Args:
            enabled: True allows roaming.
        """
        self.state.roaming = enabled
        return {"roaming": enabled}

    @tool(effect="read")
    def get_apn_settings(self) -> dict[str, Any]:
        """Show the APN the phone uses, and whether the carrier accepts it."""
        apn = self.state.apn
        return {"apn": {**apn.model_dump(), "accepted": apn.name == CARRIER_APN}}

    @tool(effect="setting", setting="apn", idempotent=True)
    def reset_apn_settings(self) -> dict[str, Any]:
        """Restore the APN the carrier ships."""
        self.state.apn = AccessPoint()
        return {"apn": self.state.apn.model_dump(), "pages_load": self._loads()}
