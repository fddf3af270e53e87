"""``pocketpilot mcp serve``: a phone's tools, and the agent itself, as an MCP server.

Each tool of the chosen device is listed with its declared semantics as MCP annotations
(``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``; the effect and
record arguments in ``_meta``). ``run_request`` hands a whole request to the agent.

Confirmation follows the server's own rules, not the host's: a direct call of a tool is run
as a one-step harness run, through the same policies (gates, then confirmation) as any run, and
recorded in a trace. A call that needs the user's yes asks through MCP elicitation where the
client declared it (as a standalone ``elicitation/create`` before protocol 2026-07-28, as an
``InputRequiredResult`` round since), and is denied where it did not: an MCP host cannot get
around confirmation by calling the tool directly. An "allow" counts only for the call it was
asked about (its digest rides in the server-sealed ``requestState``). ``run_request`` asks the
same way mid-run: on a 2026-07-28 connection the run waits at the call while the tool call
returns the question, and the client's retry with the answer lets it go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from mcp.types import Tool as McpTool
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field, ValidationError

from ..contracts import Episode, Finish, ToolCall, ToolCallAction, ToolResult, ToolSpec
from ..errors import UsageError
from ..executor.base import Executor
from ..harness import HarnessConfig, Planner, Session, safety_policies
from ..harness.planners import ScriptedPlanner
from .auth import check_bearer
from .errors import Unauthorized

__all__ = ["BearerGuard", "McpConfirmation", "PhoneMcpServer", "annotations_of"]

logger = logging.getLogger(__name__)

INPUT_REQUIRED_VERSION = "2026-07-28"
"""From this protocol revision a server asks within a call's result, not by a request of its own."""
CONFIRM_KEY = "pocketpilot.confirm"
_ANSWER_SCHEMA = {"type": "object", "properties": {"allow": {
    "type": "boolean", "title": "Allow", "description": "Allow this call to run"}}, "required": ["allow"]}


def annotations_of(spec: ToolSpec) -> ToolAnnotations:
    """The MCP annotations a tool's declared semantics map to (the inverse of the executor's import)."""
    return ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                           idempotent_hint=spec.idempotent, open_world_hint=spec.open_world)


def _mcp_tool(spec: ToolSpec) -> McpTool:
    return McpTool(name=spec.name, description=spec.description, input_schema=spec.parameters,
                   annotations=annotations_of(spec), _meta={"io.pocketpilot/semantics": spec.semantics()})


def call_digest(call: ToolCall) -> str:
    """What an answer is bound to: the tool and its exact arguments."""
    canonical = json.dumps({"name": call.name, "arguments": call.arguments}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _elicits(ctx: Context[Any, Any]) -> bool:
    caps = ctx.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    # a bare `elicitation: {}` (before modes existed) means form support; url-only does not
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _input_required(ctx: Context[Any, Any]) -> bool:
    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, INPUT_REQUIRED_VERSION)


class _Allow(BaseModel):
    """The answer a confirmation dialog collects (legacy elicitation)."""

    allow: bool = Field(description="Allow this call to run")


class McpConfirmation:
    """The confirmation policy of a direct call, or of a run on a connection that asks mid-call.

    Asks the client (``elicitation/create`` before protocol 2026-07-28), or denies where the
    client declared no elicitation. A direct call on a 2026-07-28 connection is one step,
    replayed once the client answered: :attr:`input_required` then holds the question to hand
    back, and only an answer given for exactly this call counts.
    """

    reason = "asked the MCP client"

    def __init__(self, ctx: Context[Any, Any]) -> None:
        self._ctx = ctx
        self.input_required: InputRequiredResult | None = None

    @staticmethod
    def message(call: ToolCall, spec: ToolSpec) -> str:
        """What the client's dialog shows."""
        args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        return f"{call.name}({args}) is {spec.effect_label()}: allow it?"

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        """Whether the client's user allowed ``call``."""
        allowed, self.reason = await self._ask(call, spec)
        return allowed

    async def _ask(self, call: ToolCall, spec: ToolSpec) -> tuple[bool, str]:
        if not _elicits(self._ctx):
            return False, "the MCP client cannot be asked (it declared no elicitation capability)"
        if not _input_required(self._ctx):
            try:
                result = await self._ctx.elicit(self.message(call, spec), _Allow)
            except (MCPError, ValueError) as exc:
                return False, f"the MCP client did not answer ({' '.join(str(exc).split())})"
            allowed = result.action == "accept" and bool(result.data.allow)  # type: ignore[union-attr]
            return allowed, f"{'allowed' if allowed else 'refused'} through MCP elicitation ({result.action})"
        answer = self._answer(call)
        if answer is None:
            request = ElicitRequest(params=ElicitRequestFormParams(message=self.message(call, spec),
                                                                   requested_schema=_ANSWER_SCHEMA))
            self.input_required = InputRequiredResult(input_requests={CONFIRM_KEY: request},
                                                      request_state=json.dumps({"call": call_digest(call)}))
            return False, "waiting for the MCP client's answer"
        allowed = answer.action == "accept" and bool((answer.content or {}).get("allow"))
        return allowed, f"{'allowed' if allowed else 'refused'} through MCP elicitation ({answer.action})"

    def _answer(self, call: ToolCall) -> ElicitResult | None:
        """The client's answer to the question asked about exactly this call, if any."""
        state = self._ctx.request_state  # sealed by the server's boundary: the client cannot mint one
        answer = _elicit_result((self._ctx.input_responses or {}).get(CONFIRM_KEY))
        if answer is None or not state:
            return None
        try:
            asked = json.loads(state).get("call")
        except (ValueError, AttributeError):
            return None
        return answer if asked == call_digest(call) else None


def _elicit_result(answer: Any) -> ElicitResult | None:
    """An input response as the ElicitResult it must be (None: absent or something else)."""
    if answer is None:
        return None
    if isinstance(answer, ElicitResult):
        return answer
    try:
        return ElicitResult.model_validate(answer.model_dump() if hasattr(answer, "model_dump") else answer)
    except ValidationError:
        return None


def _result(result: ToolResult, episode: Episode) -> CallToolResult:
    body = {"ok": result.ok, **result.model_dump(mode="json", exclude_defaults=True)}
    structured = body if isinstance(body, dict) else None
    text = json.dumps(body, ensure_ascii=False, default=str)
    if not result.ok and episode.stop_reason == "denied":
        text = f"denied: {episode.stop_detail}"
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured,
                          is_error=not result.ok)


@dataclass
class _Ask:
    """A confirmation a paused run waits on: the call, its effective semantics, the answer to come."""

    call: ToolCall
    spec: ToolSpec
    answer: asyncio.Future[tuple[bool, str]]


class _RoundConfirmation:
    """The confirmation policy of an agent run asked in ``InputRequiredResult`` rounds.

    The run waits at the call while the tool call that started it returns the question; the
    client's retry answers it and the run goes on. Nobody answering within the timeout is a
    "no", and the run says so.
    """

    reason = "asked the MCP client"

    def __init__(self, asks: asyncio.Queue[_Ask], timeout_s: float) -> None:
        self._asks, self._timeout_s = asks, timeout_s

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        """Post the question and wait for the answer (or the timeout)."""
        ask = _Ask(call, spec, asyncio.get_running_loop().create_future())
        await self._asks.put(ask)
        try:
            async with asyncio.timeout(self._timeout_s):
                allowed, reason = await ask.answer
        except TimeoutError:
            self.reason = f"no answer within {self._timeout_s:g}s: denied"
            return False
        self.reason = reason
        return allowed


@dataclass
class _AgentRun:
    """A ``run_request`` in progress, between the rounds of its questions."""

    task: asyncio.Task[Episode]
    asks: asyncio.Queue[_Ask]
    current: _Ask | None = None


_RUN_REQUEST = McpTool(
    name="run_request",
    description=("Hand a whole request to the phone agent; it plans and calls the tools, asking before any call "
                 "that needs confirmation. Follow-up requests keep the conversation."),
    input_schema={"type": "object", "properties": {"request": {"type": "string", "minLength": 1,
                                                                "description": "What the user wants done"}},
                  "required": ["request"]},
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                open_world_hint=True))


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


@contextlib.asynccontextmanager
async def _closing(server: MCPServer) -> AsyncIterator[dict[str, Any]]:
    """The server's lifespan: a run still waiting for an answer is cancelled (its trace says so)."""
    try:
        yield {}
    finally:
        assert isinstance(server, PhoneMcpServer)
        await server.aclose()


class PhoneMcpServer(MCPServer):
    """An MCP server over one device: its tools, called directly through the harness's
    policies, and ``run_request``, the agent on a whole request.

    Args:
        executor: the device.
        planners: makes the agent's planner, on the first ``run_request`` (None: no agent;
            ``run_request`` is not listed).
        trace_dir: where every run, direct calls included, is recorded.
        session_kwargs: the harness's kit for the device's tools (skills, gates, policies under η).
        max_steps: the agent's step budget per request.
        confirm_timeout_s: how long a run waits for the answer to a confirmation (then: denied).
    """

    def __init__(self, executor: Executor, planners: Callable[[], Planner] | None, *, trace_dir: Path,
                 session_kwargs: dict[str, Any] | None = None, max_steps: int = 15, confirm_timeout_s: float = 120.0,
                 name: str = "pocketpilot") -> None:
        super().__init__(name, log_level="WARNING", lifespan=_closing, instructions=(
            "Drive a phone: call its tools directly (destructive ones ask for confirmation) or hand a whole "
            "request to run_request."))
        self._executor = executor
        self._specs = {t.name: t for t in executor.tools()}
        if planners is not None and _RUN_REQUEST.name in self._specs:
            raise UsageError("the device has a tool named run_request: it would shadow the agent")
        self._planners = planners
        self._trace_dir = Path(trace_dir)
        self._kwargs = dict(session_kwargs or {})
        self._max_steps, self._confirm_timeout_s = max_steps, confirm_timeout_s
        self._agent: Session | None = None
        self._agent_lock = asyncio.Lock()
        self._device_lock = asyncio.Lock()  # one run at a time on the phone, direct calls included
        self._runs: dict[str, _AgentRun] = {}

    async def list_tools(self) -> list[McpTool]:
        """The device's tools with their semantics, then ``run_request``."""
        agent = [_RUN_REQUEST] if self._planners is not None else []
        return [_mcp_tool(spec) for spec in self._specs.values()] + agent + await super().list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        """A device tool runs as a one-step harness run, ``run_request`` as an agent run."""
        if context is None:
            context = Context(mcp_server=self)
        if name in self._specs:
            return await self._direct(ToolCall(name=name, arguments=arguments or {}), context)
        if name == _RUN_REQUEST.name and self._planners is not None:
            request = (arguments or {}).get("request")
            if not isinstance(request, str) or not request.strip():
                return _error("run_request needs a non-empty request")
            return await self._run_request(request, context)
        return await super().call_tool(name, arguments, context)

    def _session(self, planner: Planner, confirm: Any, max_steps: int, kwargs: dict[str, Any]) -> Session:
        return Session(planner, self._executor, config=HarnessConfig(max_steps=max_steps), confirm=confirm,
                       trace_dir=self._trace_dir, **kwargs)

    async def _direct(self, call: ToolCall, ctx: Context[Any, Any]) -> CallToolResult | InputRequiredResult:
        confirm = McpConfirmation(ctx)
        planner = ScriptedPlanner([ToolCallAction(calls=[call]), Finish(summary=f"called {call.name} for the MCP client")],
                                  name="mcp-direct-call")
        kwargs = {k: v for k, v in self._kwargs.items() if k in ("gates", "eta_version")}
        session = self._session(planner, confirm, 2, {"policies": safety_policies(), **kwargs})
        async with self._device_lock:
            episode = await session.run(f"MCP client call: {call.name}")
        if confirm.input_required is not None:
            return confirm.input_required
        step = episode.steps[0] if episode.steps else None
        if step is None or not step.results:
            message = step.error.message if step is not None and step.error else episode.stop_detail
            return _error(f"not run: {message}")
        return _result(step.results[0], episode)

    # ------------------------------------------------------------------ run_request

    async def _run_request(self, request: str, ctx: Context[Any, Any]) -> CallToolResult | InputRequiredResult:
        """The agent on ``request``; on a 2026-07-28 connection its questions come back as rounds."""
        rounds = _elicits(ctx) and _input_required(ctx)
        if rounds and ctx.request_state:
            return await self._resume(ctx)
        if self._agent_lock.locked():
            return _error("a request is in progress (answer its question, or wait for its result)")
        asks: asyncio.Queue[_Ask] = asyncio.Queue()
        confirm: Any = _RoundConfirmation(asks, self._confirm_timeout_s) if rounds else McpConfirmation(ctx)
        run = _AgentRun(asyncio.create_task(self._agent_run(request, confirm)), asks)
        if not rounds:
            return self._summary(await run.task)
        run_id = uuid.uuid4().hex
        self._runs[run_id] = run
        run.task.add_done_callback(lambda _: self._runs.pop(run_id, None))
        return await self._next(run_id, run)

    async def _agent_run(self, request: str, confirm: Any) -> Episode:
        assert self._planners is not None
        async with self._agent_lock:
            if self._agent is None:
                self._agent = self._session(self._planners(), confirm, self._max_steps, self._kwargs)
            self._agent.confirm = confirm
            async with self._device_lock:
                return await self._agent.run(request)

    async def _next(self, run_id: str, run: _AgentRun) -> CallToolResult | InputRequiredResult:
        """Wait for the run's next question (handed back as a round) or its end."""
        asked = asyncio.ensure_future(run.asks.get())
        try:
            await asyncio.wait({run.task, asked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not asked.done():
                asked.cancel()
        if asked.done() and not asked.cancelled():
            run.current = asked.result()
            request = ElicitRequest(params=ElicitRequestFormParams(
                message=McpConfirmation.message(run.current.call, run.current.spec), requested_schema=_ANSWER_SCHEMA))
            return InputRequiredResult(input_requests={CONFIRM_KEY: request},
                                       request_state=json.dumps({"run": run_id, "call": call_digest(run.current.call)}))
        return self._summary(run.task.result())

    async def _resume(self, ctx: Context[Any, Any]) -> CallToolResult | InputRequiredResult:
        """A retry carrying the answer to a paused run's question."""
        try:
            state = json.loads(ctx.request_state or "")
        except json.JSONDecodeError:
            return _error("not a request state of this server")
        run_id = state.get("run") if isinstance(state, dict) else None
        run = self._runs.get(run_id) if isinstance(run_id, str) else None
        if run is None:
            return _error("that run is over (its question was answered, or timed out and was denied); see its trace")
        ask = run.current
        answer = _elicit_result((ctx.input_responses or {}).get(CONFIRM_KEY))
        if ask is not None and state.get("call") == call_digest(ask.call) and answer is not None:
            run.current = None
            allowed = answer.action == "accept" and bool((answer.content or {}).get("allow"))
            if not ask.answer.done():
                ask.answer.set_result((allowed, f"{'allowed' if allowed else 'refused'} through MCP elicitation "
                                                f"({answer.action})"))
            return await self._next(run_id, run)
        if ask is None:
            return await self._next(run_id, run)
        request = ElicitRequest(params=ElicitRequestFormParams(message=McpConfirmation.message(ask.call, ask.spec),
                                                               requested_schema=_ANSWER_SCHEMA))
        return InputRequiredResult(input_requests={CONFIRM_KEY: request},
                                   request_state=json.dumps({"run": run_id, "call": call_digest(ask.call)}))

    def _summary(self, episode: Episode) -> CallToolResult:
        final = episode.final_action
        trace = self._agent.trace_path if self._agent is not None else None
        body = {"stop_reason": episode.stop_reason, "detail": episode.stop_detail,
                "summary": final.summary if isinstance(final, Finish) else None, "steps": len(episode.steps),
                "trace": str(trace) if trace else None}
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
                              structured_content=body, is_error=episode.stop_reason in ("planner_error", "device_lost"))

    def http_app(self, token: str, *, host: str = "127.0.0.1") -> Any:
        """The streamable HTTP app (at ``/mcp``), every request of it behind the bearer token.

        The token is ``pocketpilot serve``'s: a host on the network cannot drive the phone, nor
        answer its confirmations, without what only the user's account can read.
        """
        return BearerGuard(self.streamable_http_app(host=host), token)

    def run_http(self, token: str, *, host: str, port: int) -> None:
        """Serve :meth:`http_app` with uvicorn until interrupted."""
        import uvicorn

        uvicorn.run(self.http_app(token, host=host), host=host, port=port, log_level="warning",
                    timeout_graceful_shutdown=3)

    async def aclose(self) -> None:
        """Cancel a run still waiting for an answer; release the agent's planner."""
        for run in list(self._runs.values()):
            run.task.cancel()
            await asyncio.wait({run.task})
        if self._agent is not None:
            agent, self._agent = self._agent, None
            await agent.planner.aclose()


class BearerGuard:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer <token>`` gets a 401.

    The lifespan passes through (the server's own start and stop), so does nothing else.
    """

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise UsageError("the MCP server over HTTP needs a bearer token")
        self.app, self._token = app, token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Check the token of an HTTP request, then hand it on."""
        if scope["type"] == "http":
            header = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"authorization"), None)
            try:
                check_bearer(header, self._token)
            except Unauthorized as exc:
                from starlette.responses import JSONResponse

                response = JSONResponse(exc.body(), status_code=exc.status, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
