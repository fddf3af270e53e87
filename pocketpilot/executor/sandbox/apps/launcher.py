"""The app launcher: what is installed and what is in front."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ....errors import ToolFailure
from ...tools import tool
from ._base import App

__all__ = ["LauncherApp"]


class LauncherApp(App):
    """Launch apps and see the foreground app."""

    name = "launcher"
    domain = "system"

    @tool(effect="navigate", idempotent=True)
    async def launch_app(
        self,
        app: str = Field(
            min_length=1,
            max_length=100,
            description="App name (e.g. Spotify) or package (e.g. com.spotify.music).",
        ),
    ) -> dict[str, Any]:
        """Open an app by name or package name.

        Args:
            app: App name (e.g. Spotify) or package (e.g. com.spotify.music).
        """
        state = self.state
        wanted = app.strip().lower()
        for info in state.installed_apps:
            if wanted in (info.label.lower(), info.package.lower()):
                state.foreground_app = info.package
                return {"foreground": info.package, "label": info.label}
        raise ToolFailure("not_found", f"no installed app named {app!r}")

    @tool(effect="read", idempotent=True)
    async def get_foreground_app(self) -> dict[str, Any]:
        """Read which app is in front (package and name)."""
        state = self.state
        labels = {a.package: a.label for a in state.installed_apps}
        return {"package": state.foreground_app, "label": labels.get(state.foreground_app, "Home")}

    @tool(effect="read", idempotent=True)
    async def list_apps(self) -> list[dict[str, str]]:
        """List installed apps (name and package)."""
        return [{"label": a.label, "package": a.package} for a in self.state.installed_apps]
