"""The unit converter: a fixed set of unit pairs."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ..units import CONVERSIONS, convert
from ._base import App

__all__ = ["ConverterApp"]


class ConverterApp(App):
    """Convert between common units."""

    name = "converter"
    domain = "utilities"

    @tool(effect="read", idempotent=True, fixable_errors=["unsupported_unit"])
    async def convert_units(
        self,
        value: float,
        from_unit: str = Field(min_length=1, max_length=20, description="Unit of the value, e.g. km."),
        to_unit: str = Field(min_length=1, max_length=20, description="Target unit, e.g. mi."),
    ) -> dict[str, Any]:
        """Convert a value between units (km/mi, m/ft, cm/in, kg/lb, C/F, l/gal).

        Args:
            value: The amount to convert.
            from_unit: Unit of the value, e.g. km.
            to_unit: Target unit, e.g. mi.
        """
        self.state  # noqa: B018 - the power gate applies to pure tools too
        converted = convert(value, from_unit, to_unit)
        if converted is None:
            pairs = ", ".join(f"{a}->{b}" for a, b in CONVERSIONS)
            raise ToolFailure(
                "unsupported_unit",
                f"cannot convert {from_unit!r} to {to_unit!r}; supported pairs: {pairs}",
            )
        result, src, dst = converted
        return {"value": value, "from_unit": src, "to_unit": dst, "result": round(result, 4)}
