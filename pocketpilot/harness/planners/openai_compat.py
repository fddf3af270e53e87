"""The same Action schema against any OpenAI-compatible chat endpoint (llama-server, vLLM, ...).

Servers differ in how they accept a schema: OpenAI and vLLM take
``response_format={"type": "json_schema", ...}``, llama-cpp-python's server takes
``{"type": "json_object", "schema": ...}``, some take nothing. The request sends the
configured form, and the reply is validated client-side either way, so a server that ignores
the schema yields a typed PlannerOutputError rather than a wrong action.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import httpx

from ...contracts import PlannerInfo, PlannerTurn, SamplerSettings
from ...errors import PlannerBackendError, PlannerOutputError
from ..action_schema import action_json_schema, parse_action
from ..base import PlannerOutput, PlanRequest

__all__ = ["OpenAICompatPlanner"]

SchemaMode = Literal["json_schema", "json_object_schema", "none"]


class OpenAICompatPlanner:
    """Planner over HTTP; one ``httpx.AsyncClient`` per planner, closed by :meth:`aclose`."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        sampler: SamplerSettings | None = None,
        schema_mode: SchemaMode = "json_schema",
        timeout_s: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.sampler = sampler or SamplerSettings()
        self.schema_mode = schema_mode
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=timeout_s, transport=transport
        )

    @property
    def info(self) -> PlannerInfo:
        """Endpoint and model name; the server does not tell us its file hash."""
        return PlannerInfo(backend=f"openai-compat:{self.base_url}", model=self.model, sampler=self.sampler)

    def count_tokens(self, text: str) -> int:
        """Approximate (the server's tokenizer is not at hand): 3.5 characters a token."""
        return max(1, int(len(text) / 3.5))

    def _payload(self, request: PlanRequest, schema: dict[str, Any]) -> dict[str, Any]:
        s = self.sampler
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_tokens,
            "seed": s.seed,
        }
        if self.schema_mode == "json_schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "action", "schema": schema, "strict": True},
            }
        elif self.schema_mode == "json_object_schema":
            payload["response_format"] = {"type": "json_object", "schema": schema}
        return payload

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        """POST /chat/completions and validate the reply into an Action."""
        schema = action_json_schema(request.tools, request.kinds, request.skills)
        t0 = time.monotonic()
        try:
            response = await self._client.post("/chat/completions", json=self._payload(request, schema))
        except httpx.HTTPError as exc:
            raise PlannerBackendError(f"{self.base_url}: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise PlannerBackendError(f"{self.base_url}: HTTP {response.status_code}: {response.text[:200]}")
        try:
            body = response.json()
            choice = body["choices"][0]
            raw = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise PlannerBackendError(f"{self.base_url}: malformed completion response") from exc
        usage = body.get("usage") or {}
        turn = PlannerTurn(
            raw=raw,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            prompt_tokens_evaluated=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=str(choice.get("finish_reason") or "stop"),
            latency_s=time.monotonic() - t0,
        )
        if turn.finish_reason == "length":
            raise PlannerOutputError(raw, f"output cut at max_tokens={self.sampler.max_tokens}", turn)
        try:
            action = parse_action(raw, request.tools, request.kinds)
        except PlannerOutputError as exc:
            raise PlannerOutputError(raw, exc.reason, turn) from exc
        return PlannerOutput(action=action, turn=turn)

    async def load(self) -> None:
        """Nothing to prepare."""

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()

