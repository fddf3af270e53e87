"""Expose the tools of any MCP server (stdio or streamable HTTP) as a pocketpilot Executor.

The official ``mcp`` client holds anyio cancel scopes that must be exited by the task that
entered them, so one owner task keeps the connection open for the executor's lifetime; calls
from any task (a session's parallel batch, several sessions) go through the shared client
session. Normalization at the edge:

- ``tools/list`` -> :class:`~pocketpilot.contracts.ToolSpec` (inputSchema -> parameters,
  outputSchema -> result_schema, annotations -> the semantics, with MCP's defaults where a
  server gives none), names made valid and unique;
- a ``CallToolResult`` -> :class:`~pocketpilot.contracts.ToolResult` (``isError`` -> ``ok=False``
  with code ``mcp_tool_error``; arguments that fail the input schema -> ``invalid_arguments``
  without a round trip);
- a server that cannot be started, dies, or stops answering -> :class:`.errors.McpConnectionError`
  or :class:`.errors.McpTimeout` (ExecutorErrors: the harness ends the episode with
  ``device_lost`` instead of feeding the planner a broken world). :meth:`McpExecutor.reconnect`
  starts a fresh connection (for stdio, a fresh server process).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import anyio
import jsonschema

from ...contracts import ToolCall, ToolResult, ToolSpec
from ...errors import UsageError
from .convert import result_from_mcp, spec_from_mcp, tool_name
from .errors import McpConnectionError, McpTimeout

__all__ = ["McpExecutor", "http_server", "stdio_server"]

logger = logging.getLogger(__name__)

_INVALID_PARAMS = -32602
_METHOD_NOT_FOUND = -32601
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001


def _require_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise UsageError("MCP tools need the optional extra: pip install 'pocketpilot[mcp]'") from exc


def stdio_server(
    command: str, args: Sequence[str] = (), *, env: dict[str, str] | None = None, cwd: str | None = None
) -> Any:
    """Parameters for an MCP server launched as a subprocess speaking MCP over stdin/stdout."""
    _require_mcp()
    from mcp import StdioServerParameters

    return StdioServerParameters(command=command, args=list(args), env=env, cwd=cwd)


def http_server(url: str) -> str:
    """A streamable-HTTP MCP endpoint (e.g. ``http://127.0.0.1:8000/mcp``)."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"not an http(s) URL: {url!r}")
    return url


class McpExecutor:
    """The tools of one MCP server, as an :class:`~pocketpilot.harness.base.Executor`.

    Args:
        server: :func:`stdio_server` parameters or an HTTP URL (:func:`http_server`).
        prefix: prepended to every tool name (``"weather.forecast"``) to keep servers apart.
        timeout_s: how long one call (and the start-up handshake) may take.
        assume_destructive: treat a tool without a ``destructiveHint`` as destructive (MCP's
            default, so it needs confirmation); False only for a server its user trusts.
        semantics: per server tool name, semantics that override the server's annotations
            (``{"forecast": {"read_only": True}}``), for servers that annotate nothing.
        errlog: where a stdio server's stderr goes (default: this process's stderr).
    """

    def __init__(
        self,
        server: Any,
        *,
        prefix: str | None = None,
        timeout_s: float = 30.0,
        assume_destructive: bool = True,
        semantics: Mapping[str, Mapping[str, Any]] | None = None,
        errlog: TextIO | None = None,
    ) -> None:
        _require_mcp()
        self._server = server
        self.label = server if isinstance(server, str) else " ".join([server.command, *server.args])
        self.prefix = prefix
        self.timeout_s = timeout_s
        self.assume_destructive = assume_destructive
        self.semantics = {k: dict(v) for k, v in (semantics or {}).items()}
        allowed = set(ToolSpec.model_fields) - {"name", "description", "parameters", "result_schema"}
        for tool, declared in self.semantics.items():
            unknown = sorted(set(declared) - allowed)
            if unknown:
                raise UsageError(f"semantics for {tool!r}: unknown field(s) {', '.join(unknown)}")
        self._errlog = errlog
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._specs: dict[str, ToolSpec] = {}
        self._names: dict[str, str] = {}
        """pocketpilot tool name -> the server's own name."""
        self._lost: BaseException | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> McpExecutor:
        """Connect, handshake and list the tools.

        Raises:
            McpConnectionError: the server could not be started or reached.
            McpTimeout: it did not finish the handshake in ``timeout_s``.
        """
        if self._owner is not None and not self._owner.done():
            return self
        self._lost = None
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._owner = asyncio.create_task(self._own(ready, self._closing), name=f"mcp:{self.label}")
        try:
            async with asyncio.timeout(self.timeout_s):  # not wait_for: it can drop a cancellation
                await asyncio.shield(ready)
        except TimeoutError:
            await self.aclose()
            raise McpTimeout(self.label, f"no handshake within {self.timeout_s}s") from None
        except BaseException:
            await self.aclose()
            raise
        return self

    def _transport(self) -> Any:
        if isinstance(self._server, str):
            return self._server
        from mcp.client.stdio import stdio_client

        return stdio_client(self._server, errlog=self._errlog or sys.stderr)

    async def _own(self, ready: asyncio.Future[None], closing: asyncio.Event) -> None:
        """Hold the connection open in one task (anyio scopes must exit where they entered)."""
        from mcp import Client

        try:
            async with Client(self._transport(), read_timeout_seconds=self.timeout_s) as client:
                self._client = client
                await self._list_tools(client)
                ready.set_result(None)
                await closing.wait()
        except BaseException as exc:  # noqa: BLE001 - every way the connection ends is recorded
            self._lost = exc
            if not ready.done():
                ready.set_exception(_connection_error(self.label, exc, "could not start"))
            elif not closing.is_set():
                logger.warning("MCP server %s went away: %r", self.label, exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._client = None

    async def _list_tools(self, client: Any) -> None:
        specs: dict[str, ToolSpec] = {}
        names: dict[str, str] = {}
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                name = tool_name(tool.name, self.prefix, specs)
                declared = self.semantics.get(tool.name)
                specs[name] = spec_from_mcp(tool, name, assume_destructive=self.assume_destructive, declared=declared)
                names[name] = tool.name
            cursor = page.next_cursor
            if not cursor:
                break
        self._specs, self._names = specs, names
        logger.info("MCP server %s: %d tools", self.label, len(specs))

    async def refresh_tools(self) -> list[ToolSpec]:
        """List the server's tools again (servers may add or remove tools mid-session)."""
        await self._list_tools(self._live_client())
        return self.tools()

    async def reconnect(self) -> McpExecutor:
        """Drop the current connection and start a new one (a new process for stdio servers)."""
        await self.aclose()
        return await self.start()

    async def aclose(self) -> None:
        """Close the connection (for stdio: the server process is stopped by the mcp client)."""
        owner, self._owner = self._owner, None
        if owner is None:
            return
        if self._closing is not None:
            self._closing.set()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(owner, self.timeout_s)
        if not owner.done():  # pragma: no cover - a client that ignores closing
            owner.cancel()
            await asyncio.wait({owner})

    async def __aenter__(self) -> McpExecutor:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ Executor

    def tools(self) -> list[ToolSpec]:
        """The server's tools as listed at start (or the last :meth:`refresh_tools`)."""
        return list(self._specs.values())

    def _live_client(self) -> Any:
        if self._owner is None:
            raise McpConnectionError(self.label, "not started; call start() or use `async with`")
        if self._client is None or self._owner.done() or self._lost is not None:
            raise McpConnectionError(self.label, f"the connection is gone ({self._lost!r}); call reconnect()")
        return self._client

    async def call(self, call: ToolCall) -> ToolResult:
        """Call one tool on the server.

        Raises:
            McpConnectionError: the server is gone (including dying during this call).
            McpTimeout: no answer within ``timeout_s``.
        """
        client = self._live_client()
        spec = self._specs.get(call.name)
        if spec is None:
            return ToolResult.failure(
                "unknown_tool", f"no MCP tool named {call.name!r}; available: {', '.join(self._specs)}"
            )
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(spec.parameters).iter_errors(call.arguments)
        )
        if error is not None:
            where = ".".join(map(str, error.absolute_path)) or "(arguments)"
            return ToolResult.failure("invalid_arguments", f"{call.name}: {where}: {error.message}")
        from mcp import MCPError

        try:
            result = await client.call_tool(self._names[call.name], call.arguments)
        except MCPError as exc:
            if exc.code == _INVALID_PARAMS:
                return ToolResult.failure("invalid_arguments", f"{call.name}: {exc.message}")
            if exc.code == _METHOD_NOT_FOUND:
                return ToolResult.failure("unknown_tool", f"{call.name}: {exc.message}")
            if exc.code == _CONNECTION_CLOSED:
                self._lost = exc  # later calls fail fast until reconnect()
            if exc.code in {_CONNECTION_CLOSED, _REQUEST_TIMEOUT}:
                raise _connection_error(self.label, exc, f"{call.name} failed") from exc
            # Any other JSON-RPC error is the server refusing this call while still alive.
            return ToolResult.failure("mcp_error", f"{call.name}: {exc.message} (code {exc.code})")
        except (
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            anyio.EndOfStream,
            OSError,
            TimeoutError,
        ) as exc:
            if not isinstance(exc, TimeoutError):
                self._lost = exc
            raise _connection_error(self.label, exc, f"{call.name} failed") from exc
        return result_from_mcp(result)


def _connection_error(label: str, exc: BaseException, what: str) -> McpConnectionError | McpTimeout:
    """The typed error for one way an MCP connection fails."""
    from mcp import MCPError

    # anyio task groups wrap the cause (BaseExceptionGroup: a builtin only from 3.11; anyio
    # brings the backport on 3.10, so duck-type it).
    while isinstance(getattr(exc, "exceptions", None), tuple) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    if isinstance(exc, TimeoutError) or (isinstance(exc, MCPError) and exc.code == _REQUEST_TIMEOUT):
        return McpTimeout(label, f"{what}: no answer in time ({exc})")
    return McpConnectionError(label, f"{what}: {type(exc).__name__}: {exc}")
