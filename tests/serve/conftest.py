"""The service under test: the real app on uvicorn, on a free loopback port, inside the test's loop.

Nothing outlives a test: the server task is stopped and awaited at teardown, the registry
closes every session (runs cancelled, devices closed), and the SSE readers hang up with
their HTTP streams.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from _serve_support import TOKEN, Scripts, Served, free_port

from pocketpilot.serve import ServeConfig, create_app
from pocketpilot.serve.devices import DeviceFactory


@pytest.fixture
def make_server(tmp_path: Path) -> Callable[..., Any]:
    """An async context factory: ``async with make_server(**config) as served``."""
    @contextlib.asynccontextmanager
    async def start(devices: DeviceFactory | None = None, memory: Any = None, kit: Any = None,
                    **config: Any) -> AsyncIterator[Served]:
        scripts = Scripts()
        trace_dir = tmp_path / "traces"
        app = create_app(ServeConfig(trace_dir=trace_dir, **config), scripts, token=TOKEN, devices=devices,
                         memory=memory, kit=kit)
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                               timeout_graceful_shutdown=2, lifespan="on"))
        task = asyncio.create_task(server.serve())
        for _ in range(200):
            if server.started:
                break
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        url = f"http://127.0.0.1:{port}"
        try:
            async with httpx.AsyncClient(base_url=url, timeout=10) as client:
                yield Served(url, app, scripts, trace_dir, client)
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, 15)

    return start


@pytest.fixture
async def served(make_server: Callable[..., Any]) -> AsyncIterator[Served]:
    async with make_server() as s:
        yield s


