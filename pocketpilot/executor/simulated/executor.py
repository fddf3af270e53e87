"""The LLM-simulated backend: long-tail tools answered by a local model, checked before use.

For a tool no sandbox app implements (a bank balance, a parcel's tracking, a smart-home scene),
the app declares its :class:`~pocketpilot.contracts.ToolSpec` with a ``result_schema``. Each
call then asks a :class:`~.model.ResponseModel` for a result constrained to that schema,
conditioned on the recorded state (a JSON dict) and the earlier simulated results, and checks
the candidate with :func:`~.consistency.check_result`. A rejected candidate is regenerated
once, with the reason in the prompt; a second rejection becomes ``ToolResult(ok=False)`` with
code ``simulation_inconsistent`` (or ``simulation_invalid``), never an unchecked answer. Every
answer it gives carries ``simulated=True``, so traces and the CLI show it was not a real app.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from pydantic import ValidationError

from ...contracts import ToolCall, ToolError, ToolResult, ToolSpec
from ...errors import ToolDefinitionError
from .consistency import Invariant, SimRecord, SimulationLog, check_result
from .model import ResponseModel

__all__ = ["SimulatedExecutor", "SimulatedTool"]

logger = logging.getLogger(__name__)

_SYSTEM = (
    "You simulate tools of a phone's apps, for testing an assistant. Reply with one JSON value "
    "matching the tool's result schema and nothing else. Stay consistent with the device state "
    "and with earlier results: reuse their ids and values, and never contradict them."
)
"""Tool-independent, and the state comes before the call: consecutive calls share a prompt
prefix, so llama.cpp's KV cache skips re-reading it."""


@dataclass(frozen=True)
class SimulatedTool:
    """A long-tail tool the model answers: its spec (with ``result_schema``) and its rules.

    Args:
        spec: name, description, argument schema and the result schema the model must fill.
        read_only: a query; asked again with no state change in between it must answer the same.
            A tool that is not read-only changes the state version.
        invariants: extra rules its results must satisfy (e.g. ``IdsExist("order_id")``).
    """

    spec: ToolSpec
    read_only: bool = False
    invariants: tuple[Invariant, ...] = ()

    def __post_init__(self) -> None:
        if self.spec.result_schema is None:
            raise ToolDefinitionError(f"simulated tool {self.spec.name!r} needs a result_schema")
        for what, schema in (
            ("parameters", self.spec.parameters),
            ("result_schema", self.spec.result_schema),
        ):
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise ToolDefinitionError(
                    f"simulated tool {self.spec.name!r}: bad {what}: {exc.message}"
                ) from exc

    @classmethod
    def declare(
        cls,
        name: str,
        description: str,
        *,
        parameters: dict[str, Any] | None = None,
        result_schema: dict[str, Any],
        read_only: bool = False,
        destructive: bool = False,
        invariants: Sequence[Invariant] = (),
    ) -> SimulatedTool:
        """Shorthand that builds the ToolSpec too."""
        try:
            spec = ToolSpec(
                name=name,
                description=description,
                parameters=parameters or {"type": "object", "properties": {}},
                destructive=destructive,
                read_only=read_only,
                idempotent=read_only,
                result_schema=result_schema,
            )
        except ValidationError as exc:
            raise ToolDefinitionError(f"simulated tool {name!r}: {exc.errors(include_url=False)[0]['msg']}") from exc
        return cls(spec=spec, read_only=read_only, invariants=tuple(invariants))


class SimulatedExecutor:
    """An :class:`~pocketpilot.harness.base.Executor` whose tools are answered by a model.

    Args:
        model: produces the raw JSON text of a result.
        tools: the simulated tools.
        state: the recorded state the answers are conditioned on (JSON-serializable).
        history_limit: how many earlier results go into the prompt (all are still checked).
    """

    def __init__(
        self,
        model: ResponseModel,
        tools: Iterable[SimulatedTool],
        *,
        state: dict[str, Any] | None = None,
        history_limit: int = 12,
    ) -> None:
        self.model = model
        self._tools: dict[str, SimulatedTool] = {}
        for t in tools:
            if t.spec.name in self._tools:
                raise ToolDefinitionError(f"duplicate simulated tool {t.spec.name!r}")
            self._tools[t.spec.name] = t
        self.log = SimulationLog(state=dict(state or {}))
        self.history_limit = history_limit
        self._lock = asyncio.Lock()  # results are checked against the ones before: one at a time

    def tools(self) -> list[ToolSpec]:
        """Specs of every simulated tool (result schemas included)."""
        return [t.spec for t in self._tools.values()]

    def update_state(self, changes: dict[str, Any]) -> None:
        """Merge ``changes`` into the recorded state (top-level keys); earlier answers may now differ."""
        self.log.state.update(changes)
        self.log.state_version += 1

    async def call(self, call: ToolCall) -> ToolResult:
        """Simulate one call; see the module docstring for the checks and the retry."""
        sim = self._tools.get(call.name)
        if sim is None:
            return ToolResult.failure(
                "unknown_tool", f"no simulated tool {call.name!r}; available: {', '.join(self._tools)}"
            )
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(sim.spec.parameters).iter_errors(call.arguments)
        )
        if error is not None:
            where = ".".join(map(str, error.absolute_path)) or "(arguments)"
            return ToolResult.failure("invalid_arguments", f"{call.name}: {where}: {error.message}")
        async with self._lock:
            return await self._simulate(sim, call)

    async def _simulate(self, sim: SimulatedTool, call: ToolCall) -> ToolResult:
        schema = sim.spec.result_schema
        assert schema is not None  # checked in SimulatedTool
        messages = self._messages(sim, call)
        problem: tuple[str, str] = ("simulation_invalid", "no answer")
        for attempt in (1, 2):
            raw = await self.model.generate(messages, schema)
            try:
                data = json.loads(raw)
            except ValueError:
                problem = ("simulation_invalid", f"not valid JSON (cut off?): {raw[:200]!r}")
            else:
                found = check_result(
                    call,
                    data,
                    schema=schema,
                    read_only=sim.read_only,
                    invariants=sim.invariants,
                    log=self.log,
                )
                if found is None:
                    self._record(sim, call, data)
                    return ToolResult(ok=True, data=data, simulated=True)
                problem = found
            logger.info("simulated %s rejected (attempt %d): %s", call.name, attempt, problem[1])
            messages = [
                *messages,
                {"role": "assistant", "content": raw},
                {"role": "user", "content": f"That answer was rejected: {problem[1]}. Answer again."},
            ]
        code, reason = problem
        return ToolResult(
            ok=False,
            error=ToolError(code=code, message=f"{call.name}: simulated result rejected twice: {reason}"),
            simulated=True,
        )

    def _record(self, sim: SimulatedTool, call: ToolCall, data: Any) -> None:
        self.log.records.append(
            SimRecord(
                tool=call.name,
                arguments=dict(call.arguments),
                data=data,
                state_version=self.log.state_version,
                read_only=sim.read_only,
            )
        )
        if not sim.read_only:
            self.log.state_version += 1

    def _messages(self, sim: SimulatedTool, call: ToolCall) -> list[dict[str, str]]:
        earlier = self.log.records[-self.history_limit :] if self.history_limit else []
        lines = [
            f"- {r.tool}({json.dumps(r.arguments, sort_keys=True)}) -> {json.dumps(r.data, sort_keys=True)}"
            for r in earlier
        ]
        user = (
            f"Device state:\n{json.dumps(self.log.state, sort_keys=True)}\n\n"
            f"Earlier results (oldest first):\n{chr(10).join(lines) or '(none)'}\n\n"
            f"Tool: {sim.spec.name}: {sim.spec.description}\n"
            f"Call: {call.name}({json.dumps(call.arguments, sort_keys=True)})\n"
            f"Result schema: {json.dumps(sim.spec.result_schema, sort_keys=True)}"
        )
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]
