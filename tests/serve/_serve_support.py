"""Helpers of the serve tests: the scripted planners, the served app's handle, an SSE reader.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.serve import SESSION_KEY_HEADER

TOKEN = "test-token-0123456789"


@dataclass
class Scripts:
    """Planner factory: the model name picks a script; each session gets a fresh planner."""

    scripts: dict[str, list[Any]] = field(default_factory=dict)
    made: list[ScriptedPlanner] = field(default_factory=list)

    def __call__(self, model: str) -> ScriptedPlanner:
        planner = ScriptedPlanner(self.scripts.get(model, [{"kind": "finish", "summary": "nothing to do"}]),
                                  name=model)
        self.made.append(planner)
        return planner


@dataclass
class Served:
    url: str
    app: Any
    scripts: Scripts
    trace_dir: Path
    client: httpx.AsyncClient

    def auth(self, key: str | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        if key is not None:
            headers[SESSION_KEY_HEADER] = key
        return headers

    async def open(self, script: Sequence[Any] | None = None, *, model: str | None = None, **body: Any) -> tuple[str, str]:
        """Create a session (with ``script`` as its planner); returns (id, key)."""
        if script is not None:
            model = model or f"script-{len(self.scripts.scripts)}"
            self.scripts.scripts[model] = list(script)
        payload = {"owner": "alice", "eta": "none", **body}
        if model is not None:
            payload["model"] = model
        r = await self.client.post("/v1/sessions", json=payload, headers=self.auth())
        assert r.status_code == 201, r.text
        return r.json()["id"], r.json()["key"]

    async def send(self, sid: str, key: str, request: str) -> httpx.Response:
        return await self.client.post(f"/v1/sessions/{sid}/requests", json={"request": request},
                                      headers=self.auth(key))

    def phone(self, sid: str) -> Any:
        """The session's sandbox phone (state read straight from the device)."""
        return self.app.state.registry._sessions[sid].device.state


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Event:
    id: int
    event: str
    data: Any
    raw: str


async def sse(client: httpx.AsyncClient, path: str, headers: dict[str, str], *,
              until: Callable[[Event], bool], last_id: int | None = None, timeout: float = 10) -> list[Event]:
    """Read events from ``path`` until one matches ``until`` (included); then hang up."""
    headers = dict(headers)
    if last_id is not None:
        headers["Last-Event-ID"] = str(last_id)
    got: list[Event] = []
    async with asyncio.timeout(timeout):
        async with client.stream("GET", path, headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            assert response.headers["content-type"].startswith("text/event-stream")
            fields: dict[str, str] = {}
            async for line in response.aiter_lines():
                if line == "":
                    if "data" in fields:
                        raw = fields["data"]
                        item = Event(int(fields["id"]), fields.get("event", "message"), json.loads(raw), raw)
                        got.append(item)
                        if until(item):
                            return got
                    fields = {}
                    continue
                if line.startswith(":"):
                    continue
                name, _, value = line.partition(":")
                fields[name] = value[1:] if value.startswith(" ") else value
    return got


def kind(name: str) -> Callable[[Event], bool]:
    return lambda e: e.event == name


def question(e: Event) -> bool:
    return e.event == "question"
