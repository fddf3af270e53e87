"""The tiny team world of the generator tests: the team's kennel app (``bench/kennel_app.py``, the
world the evolve bench and the evolve tests run on), plus a plain function tool and a tool factory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import Field

from pocketpilot.executor.tools import tool

TEAM_MODULE = Path(__file__).resolve().parents[2] / "bench" / "kennel_app.py"
if str(TEAM_MODULE.parent) not in sys.path:
    sys.path.insert(0, str(TEAM_MODULE.parent))

from kennel_app import WORLD, KennelState  # noqa: E402

__all__ = ["FULL_WORLD", "TEAM_MODULE", "WORLD", "home_clock", "make_garden"]


@tool(effect="read", idempotent=True)
async def home_clock() -> dict[str, str]:
    """Read the kennel's clock."""
    return {"time": "09:30"}


def make_garden(state: KennelState) -> Any:
    """A factory: called with the state, returns the tools it makes over it."""

    @tool(effect="setting", setting="sprinkler", idempotent=True)
    async def sprinkler(minutes: int = Field(ge=5, le=60)) -> dict[str, int]:
        """Run the yard's sprinkler.

        Args:
            minutes: How long.
        """
        state.feeding = "morning" if minutes < 30 else "twice"
        return {"minutes": minutes}

    return [sprinkler]


FULL_WORLD = {**WORLD, "apps": [*WORLD["apps"], "tiny_world:home_clock", "tiny_world:make_garden"]}
