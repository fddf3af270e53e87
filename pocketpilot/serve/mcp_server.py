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
asked about (its digest rides in the server-sealed ``requestState``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable
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

__all__ = ["McpConfirmation", "PhoneMcpServer", "annotations_of"]

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
    """The confirmation policy of runs an MCP client started: ask the client, or deny.

    ``mid_run``: a run of the agent (``run_request``), which cannot be replayed to ask again;
    on a connection that asks only through ``InputRequiredResult`` rounds a call mid-run is
    then denied (the run stops as denied and says why). A direct call is one step, replayed
    after the client answered: :attr:`input_required` holds the question to hand back.
    """

    reason = "asked the MCP client"

    def __init__(self, ctx: Context[Any, Any], *, mid_run: bool) -> None:
        self._ctx, self._mid_run = ctx, mid_run
        self.input_required: InputRequiredResult | None = None

    def _message(self, call: ToolCall, spec: ToolSpec) -> str:
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
                result = await self._ctx.elicit(self._message(call, spec), _Allow)
            except (MCPError, ValueError) as exc:
                return False, f"the MCP client did not answer ({' '.join(str(exc).split())})"
            allowed = result.action == "accept" and bool(result.data.allow)  # type: ignore[union-attr]
            return allowed, f"{'allowed' if allowed else 'refused'} through MCP elicitation ({result.action})"
        if self._mid_run:
            return False, (f"the MCP client can be asked only between calls on protocol {self._ctx.protocol_version}; "
                           "call the tool directly to be asked")
        answer = self._answer(call)
        if answer is None:
            request = ElicitRequest(params=ElicitRequestFormParams(message=self._message(call, spec),
                                                                   requested_schema=_ANSWER_SCHEMA))
            self.input_required = InputRequiredResult(input_requests={CONFIRM_KEY: request},
                                                      request_state=json.dumps({"call": call_digest(call)}))
            return False, "waiting for the MCP client's answer"
        allowed = answer.action == "accept" and bool((answer.content or {}).get("allow"))
        return allowed, f"{'allowed' if allowed else 'refused'} through MCP elicitation ({answer.action})"

    def _answer(self, call: ToolCall) -> ElicitResult | None:
        """The client's answer to the question asked about exactly this call, if any."""
        responses = self._ctx.input_responses or {}
        state = self._ctx.request_state  # sealed by the server's boundary: the client cannot mint one
        if CONFIRM_KEY not in responses or not state:
            return None
        try:
            asked = json.loads(state).get("call")
            answer = responses[CONFIRM_KEY]
            result = answer if isinstance(answer, ElicitResult) else ElicitResult.model_validate(
                answer.model_dump() if hasattr(answer, "model_dump") else answer)
        except (ValueError, AttributeError, ValidationError):
            return None
        return result if asked == call_digest(call) else None


def _result(result: ToolResult, episode: Episode) -> CallToolResult:
    body = {"ok": result.ok, **result.model_dump(mode="json", exclude_defaults=True)}
    structured = body if isinstance(body, dict) else None
    text = json.dumps(body, ensure_ascii=False, default=str)
    if not result.ok and episode.stop_reason == "denied":
        text = f"denied: {episode.stop_detail}"
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured,
                          is_error=not result.ok)


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
    """

    def __init__(self, executor: Executor, planners: Callable[[], Planner] | None, *, trace_dir: Path,
                 session_kwargs: dict[str, Any] | None = None, max_steps: int = 15,
                 name: str = "pocketpilot") -> None:
        super().__init__(name, log_level="WARNING", instructions="Drive a phone: call its tools directly (destructive ones ask for "
                                            "confirmation) or hand a whole request to run_request.")
        self._executor = executor
        self._specs = {t.name: t for t in executor.tools()}
        self._planners = planners
        self._trace_dir = Path(trace_dir)
        self._kwargs = dict(session_kwargs or {})
        self._max_steps = max_steps
        self._agent: Session | None = None
        self._agent_lock = asyncio.Lock()
        self._device_lock = asyncio.Lock()  # one run at a time on the phone, direct calls included
        if planners is not None:
            if "run_request" in self._specs:
                raise UsageError("the device has a tool named run_request: it would shadow the agent")
            self.add_tool(self._run_request, name="run_request", description=(
                "Hand a whole request to the phone agent; it plans and calls the tools, asking before any call "
                "that needs confirmation. Follow-up requests keep the conversation."),
                annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                            open_world_hint=True))

    async def list_tools(self) -> list[McpTool]:
        """The device's tools with their semantics, then ``run_request``."""
        return [_mcp_tool(spec) for spec in self._specs.values()] + await super().list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        """A device tool runs as a one-step harness run; anything else is the server's own tool."""
        if name not in self._specs:
            return await super().call_tool(name, arguments, context)
        if context is None:
            context = Context(mcp_server=self)
        return await self._direct(ToolCall(name=name, arguments=arguments or {}), context)

    def _session(self, planner: Planner, confirm: McpConfirmation, max_steps: int,
                 kwargs: dict[str, Any]) -> Session:
        return Session(planner, self._executor, config=HarnessConfig(max_steps=max_steps), confirm=confirm,
                       trace_dir=self._trace_dir, **kwargs)

    async def _direct(self, call: ToolCall, ctx: Context[Any, Any]) -> CallToolResult | InputRequiredResult:
        confirm = McpConfirmation(ctx, mid_run=False)
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
            return CallToolResult(content=[TextContent(type="text", text=f"not run: {message}")], is_error=True)
        return _result(step.results[0], episode)

    async def _run_request(self, request: str, ctx: Context) -> dict[str, Any]:  # type: ignore[type-arg]
        """Run ``request`` with the agent (the conversation continues across calls)."""
        assert self._planners is not None
        async with self._agent_lock:
            confirm = McpConfirmation(ctx, mid_run=True)
            if self._agent is None:
                self._agent = self._session(self._planners(), confirm, self._max_steps, self._kwargs)
            self._agent.confirm = confirm
            async with self._device_lock:
                episode = await self._agent.run(request)
        final = episode.final_action
        return {"stop_reason": episode.stop_reason, "detail": episode.stop_detail,
                "summary": final.summary if isinstance(final, Finish) else None, "steps": len(episode.steps),
                "trace": str(self._agent.trace_path) if self._agent.trace_path else None}

    async def aclose(self) -> None:
        """Release the agent's planner."""
        if self._agent is not None:
            await self._agent.planner.aclose()
