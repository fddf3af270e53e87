"""``--mcp "CMD ARGS"`` / ``--mcp-url URL``: the tools of MCP servers, beside the phone's.

Servers are described when the command line is read (a bad value or a missing extra fails
before the model loads), started inside the run's event loop, and always stopped when the run
ends: normally, on an error, or on Ctrl-C (asyncio.run cancels the run, which unwinds through
:func:`serving`). A stdio server is a child process, so an orphan would outlive the CLI.
"""

from __future__ import annotations

import contextlib
import shlex
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

import click

from ..errors import UsageError
from ..harness import Executor

__all__ = ["McpServer", "mcp_options", "mcp_servers", "serving"]


@dataclass
class McpServer:
    """One ``--mcp``/``--mcp-url`` server: its executor and where a stdio server's stderr goes."""

    executor: Any
    log: IO[str] | None = None

    def said(self) -> str:
        """The last line the server wrote to stderr ("" for none)."""
        if self.log is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self.log.flush()
            self.log.seek(0)
            lines = [line.strip() for line in self.log.read().splitlines() if line.strip()]
            return lines[-1] if lines else ""
        return ""


def mcp_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The repeatable ``--mcp`` and ``--mcp-url`` flags."""
    fn = click.option("--mcp-url", "mcp_urls", multiple=True, metavar="URL",
                      help="Add the tools of a streamable-HTTP MCP server (repeatable).")(fn)
    return click.option("--mcp", "mcp_commands", multiple=True, metavar='"CMD ARGS"',
                        help="Add the tools of an MCP server started as CMD ARGS over stdio "
                             "(repeatable).")(fn)


def mcp_servers(commands: Sequence[str], urls: Sequence[str]) -> list[McpServer]:
    """The flags' servers, not started yet (:class:`~pocketpilot.executor.mcp.McpExecutor` s).

    Tools keep the server's names and annotations (read-only, destructive...): the executor
    converts them, and a destructive one goes through the run's confirmation policy. A stdio
    server's stderr goes to a temporary file, not into the run's output; its last line is
    quoted if the server fails to start.

    Raises:
        UsageError: an empty or unparsable command, a URL that is not http(s), no mcp extra.
    """
    if not commands and not urls:
        return []
    from ..executor.mcp import McpExecutor, http_server, stdio_server

    servers = []
    for command in commands:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise UsageError(f"--mcp {command!r}: {exc}") from exc
        if not argv:
            raise UsageError("--mcp needs a command, e.g. --mcp \"python server.py\"")
        params = stdio_server(argv[0], argv[1:])
        log = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        servers.append(McpServer(McpExecutor(params, errlog=log), log))
    servers.extend(McpServer(McpExecutor(http_server(url))) for url in urls)
    return servers


@contextlib.asynccontextmanager
async def serving(executor: Executor, servers: Sequence[McpServer]) -> AsyncIterator[Executor]:
    """``executor`` with the servers' tools added (its own tools win a name clash), for the run.

    Raises:
        UsageError: a server did not start or finish the MCP handshake (one line, before the
            model loads).
    """
    if not servers:
        yield executor
        return
    from ..executor.composite import CompositeExecutor
    from ..executor.mcp import McpServerError

    started: list[Any] = []
    try:
        for server in servers:
            try:
                started.append(await server.executor.start())
            except McpServerError as exc:
                said = server.said()
                message = f"{exc} (server said: {said})" if said else str(exc)
                raise UsageError(" ".join(message.split())) from exc
            tools = ", ".join(t.name for t in server.executor.tools()) or "no tools"
            click.echo(f"mcp: {server.executor.label}: {tools}")
        yield CompositeExecutor([executor, *started])
    finally:
        for ex in reversed(started):
            await ex.aclose()
        for server in servers:
            if server.log is not None:
                server.log.close()
