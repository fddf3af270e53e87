"""The sandbox phone: one world state, the apps that act on it, snapshot and restore."""

from __future__ import annotations

import logging

from ...errors import UsageError
from ..tools import ToolRegistry
from .apps import APP_CLASSES, App
from .apps._base import ARTIFACT_FIELDS, ID_FIELD, NAME_FIELDS
from .catalog import SandboxCatalog, build_catalog
from .diff import StateChange, diff_states
from .seeding import default_state
from .state import PhoneState

__all__ = ["PHONE_RESULT_FIELDS", "SANDBOX_WORLD", "SandboxPhone"]

SANDBOX_WORLD = "sandbox"
"""The identity the phone's tools declare (``ToolSpec.world``): the bundled skills and η notes
were written for these tools, and apply to a tool of the same name only if it declares it too."""

PHONE_RESULT_FIELDS = {"artifact_fields": list(ARTIFACT_FIELDS), "name_fields": list(NAME_FIELDS),
                       "id_field": ID_FIELD}
"""What every tool of the phone's contract declares of its results (see ``apps._base``): the
sandbox's apps and a device's tools, which implement the same contract."""

logger = logging.getLogger(__name__)


class SandboxPhone:
    """A deterministic, resettable phone whose apps are typed tools.

    The phone owns a mutable :class:`PhoneState`; each app reaches it through the phone, so
    :meth:`restore` swaps the whole world at once. ``reset`` goes back to the state the phone was
    built with (a task's initial state), not to the global default.

    Args:
        state: Initial world; defaults to ``default_state(seed)``.
        seed: Seed of the default world (ignored when ``state`` is given).
    """

    def __init__(self, state: PhoneState | None = None, *, seed: int = 0) -> None:
        self._initial = (state if state is not None else default_state(seed)).model_copy(deep=True)
        self.state: PhoneState = self._initial.model_copy(deep=True)
        self.apps: dict[str, App] = {cls.name: cls(self) for cls in APP_CLASSES}
        self._registry = ToolRegistry()
        self._app_of: dict[str, str] = {}
        for app_name, app in self.apps.items():
            for t in ToolRegistry.from_object(app).names():
                bound = getattr(app, t)  # a copy bound to this app: the class's tool is untouched
                bound.spec = bound.spec.model_copy(update={"world": SANDBOX_WORLD, **PHONE_RESULT_FIELDS})
                self._registry.add(bound)
                self._app_of[t] = app_name

    # ------------------------------------------------------------------ state

    def snapshot(self) -> PhoneState:
        """A deep copy of the whole world, independent of later changes."""
        return self.state.model_copy(deep=True)

    def restore(self, snapshot: PhoneState) -> None:
        """Replace the whole world with a copy of ``snapshot``."""
        self.state = snapshot.model_copy(deep=True)

    def reset(self) -> None:
        """Go back to the state this phone was built with."""
        self.restore(self._initial)

    def changes_since(self, snapshot: PhoneState) -> list[StateChange]:
        """What changed from ``snapshot`` to now."""
        return diff_states(snapshot, self.state)

    def to_json(self) -> str:
        """The current state as JSON."""
        return self.state.model_dump_json()

    @classmethod
    def from_json(cls, data: str | bytes) -> SandboxPhone:
        """A phone whose initial (and current) state is the JSON ``data``."""
        return cls(PhoneState.model_validate_json(data))

    # ------------------------------------------------------------------ tools

    def registry(self) -> ToolRegistry:
        """Every tool of every app, bound to this phone."""
        return self._registry

    def tool_names(self, app: str | None = None) -> list[str]:
        """Tool names, all or of one app.

        Raises:
            UsageError: for an unknown app name.
        """
        if app is None:
            return self._registry.names()
        if app not in self.apps:
            raise UsageError(f"unknown sandbox app {app!r}; apps: {', '.join(self.apps)}")
        return [t for t, a in self._app_of.items() if a == app]

    def catalog(self) -> SandboxCatalog:
        """Every app with its domain, description, state section and tool specs."""
        return build_catalog(self.apps, {a: [self._registry[t].spec for t in self.tool_names(a)] for a in self.apps})

    def app_of(self, tool_name: str) -> str:
        """Which app a tool belongs to (KeyError for an unknown tool)."""
        return self._app_of[tool_name]
