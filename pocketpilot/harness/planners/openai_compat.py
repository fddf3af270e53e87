"""The same Action schema against any OpenAI-compatible chat endpoint (llama-server, vLLM, ...).

Messages. The history goes out as a proper tool-calling conversation: each step is an
``assistant`` message with ``tool_calls`` (ids ``call_<step>_<position>``) followed by one
``tool`` message per call carrying its ``tool_call_id``; non-tool actions (finish, ask_user,
refuse, memory_search, memory_write, load_skill, delegate) ride as calls of reserved
``pp_<kind>`` functions, as in exported traces. The full mapping is in
:mod:`pocketpilot.harness.planners.openai_messages`.

The model. ``load()`` reads ``/models``: the id the server serves is what requests name and
what the trace header records, so a trace never claims a model the server was not running.
A name given by the caller must be among the served ids.

Structured output. Servers differ in how they accept a schema, and some accept a form and
then ignore it. ``output_mode="auto"`` (the default) probes the server once, in this order,
and keeps the first mode whose reply obeys a probe schema (a random constant it cannot
guess, behind the same ``oneOf`` / ``$ref`` / optional-property shape as the action schema):

1. ``json_schema``: ``response_format={"type": "json_schema", ...}`` (OpenAI, vLLM,
   llama.cpp's llama-server);
2. ``json_object_schema``: ``{"type": "json_object", "schema": ...}`` (llama-cpp-python's
   server);
3. ``tool_choice``: native tool calling, one forced function ``pp_action`` whose parameters
   are the action schema (its arguments are the action). Ranked below the response-format
   modes because chat templates render tool schemas into the prompt: more tokens, and a
   prompt prefix that changes whenever the step's tools do;
4. ``json_object``: JSON mode without a schema;
5. ``prompt``: nothing but the prompt.

The mode found is recorded as ``PlannerInfo.output_mode``. Every reply is validated
client-side whatever the mode, so a server that ignores the schema yields a typed
PlannerOutputError rather than a wrong action.

Authentication is a bearer token (``api_key``); it goes into the request header only, never
into ``info``, a trace or an error message. Transport failures, HTTP errors and malformed
replies become PlannerBackendError with one readable line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import time
from typing import Any, Literal, get_args

import httpx

from ...contracts import PlannerInfo, PlannerTurn, SamplerSettings
from ...errors import PlannerBackendError, PlannerOutputError, UsageError
from ..action_schema import action_json_schema, parse_action
from ..base import PlannerOutput, PlanRequest
from .openai_messages import openai_messages

__all__ = ["OUTPUT_MODES", "OpenAICompatPlanner", "OutputMode"]

logger = logging.getLogger(__name__)

OutputMode = Literal["json_schema", "json_object_schema", "tool_choice", "json_object", "prompt"]
OUTPUT_MODES: tuple[OutputMode, ...] = get_args(OutputMode)
"""Structured-output modes in the order ``auto`` tries them (see the module docstring)."""

_ACTION_FUNCTION = "pp_action"
_PROBE_PROMPT = "Reply with a JSON object."
_PROBE_MAX_TOKENS = 32
_ERROR_CHARS = 300


def _probe_schema(token: str) -> dict[str, Any]:
    """A schema only a constrained decoder satisfies (``token`` is random), shaped like the action schema."""
    variant = {
        "type": "object",
        "properties": {"probe": {"const": token}, "note": {"type": "string"}},
        "required": ["probe"],
        "additionalProperties": False,
    }
    return {"oneOf": [{"$ref": "#/$defs/probe"}], "$defs": {"probe": variant}}


def _endpoint_label(base_url: str) -> str:
    """The base URL without credentials or query: what errors and traces may show."""
    url = httpx.URL(base_url)
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}{url.path}".rstrip("/")


class OpenAICompatPlanner:
    """Planner over HTTP; one ``httpx.AsyncClient`` per planner, closed by :meth:`aclose`."""

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        sampler: SamplerSettings | None = None,
        output_mode: OutputMode | Literal["auto"] = "auto",
        timeout_s: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Configure the endpoint; nothing is sent until :meth:`load` (or the first plan).

        Args:
            base_url: The API root, e.g. ``http://127.0.0.1:8080/v1``.
            model: The model to ask for; None takes the one model the server lists.
            api_key: Sent as ``Authorization: Bearer``; never recorded.
            sampler: Decoding settings (the standard OpenAI fields are sent).
            output_mode: A structured-output mode, or ``auto`` to detect one.
            timeout_s: Per-request timeout.
            transport: An httpx transport (tests).
        """
        if not re.match(r"^https?://", base_url):
            raise UsageError(f"endpoint must be an http(s) URL, got {base_url!r}")
        if output_mode != "auto" and output_mode not in OUTPUT_MODES:
            raise UsageError(f"unknown output mode {output_mode!r}; one of auto, {', '.join(OUTPUT_MODES)}")
        self.base_url = base_url.rstrip("/")
        self.where = _endpoint_label(self.base_url)
        self.model = model or ""
        self._asked_model = model
        self.sampler = sampler or SamplerSettings()
        self.output_mode: OutputMode | Literal["auto"] = output_mode
        self.timeout_s = timeout_s
        self._api_key = api_key
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=timeout_s, transport=transport
        )
        self._loaded = False
        self._load_lock = asyncio.Lock()

    @property
    def info(self) -> PlannerInfo:
        """Endpoint, served model and output mode (complete after ``load``); no file hash over HTTP."""
        return PlannerInfo(
            backend=f"openai-compat:{self.where}",
            model=self.model,
            sampler=self.sampler,
            output_mode=None if self.output_mode == "auto" else self.output_mode,
        )

    def count_tokens(self, text: str) -> int:
        """Approximate (the server's tokenizer is not at hand): 3.5 characters a token."""
        return max(1, int(len(text) / 3.5))

    # ------------------------------------------------------------------ transport

    async def _send(self, method: str, path: str, payload: dict[str, Any] | None = None) -> httpx.Response:
        try:
            return await self._client.request(method, path, json=payload)
        except httpx.TimeoutException as exc:
            raise PlannerBackendError(
                f"{self.where}{path}: no reply within {self.timeout_s:g}s ({type(exc).__name__})"
            ) from exc
        except httpx.ConnectError as exc:
            raise PlannerBackendError(
                f"cannot connect to {self.where} (ConnectError: {exc}); is the server running?"
            ) from exc
        except httpx.HTTPError as exc:
            raise PlannerBackendError(f"{self.where}{path}: {type(exc).__name__}: {exc}") from exc

    def _status_error(self, response: httpx.Response, path: str) -> PlannerBackendError:
        try:
            body = response.json()
            error = body.get("error", body) if isinstance(body, dict) else body
            detail = str(error.get("message", error) if isinstance(error, dict) else error)
        except ValueError:
            detail = response.text
        detail = " ".join(detail.split())[:_ERROR_CHARS]
        if self._api_key:
            detail = detail.replace(self._api_key, "***")
        hint = ""
        if response.status_code in (401, 403):
            hint = " (the server refused the credentials: check --api-key / OPENAI_API_KEY)"
        return PlannerBackendError(f"{self.where}{path}: HTTP {response.status_code}{hint}: {detail}")

    # ------------------------------------------------------------------ loading

    async def load(self) -> None:
        """Ask the server which model it serves and which output mode it honours (once)."""
        async with self._load_lock:
            if self._loaded:
                return
            self.model = await self._served_model()
            if self.output_mode == "auto":
                self.output_mode = await self._detect_mode()
                logger.info("%s: structured output by %s", self.where, self.output_mode)
            self._loaded = True

    async def _served_model(self) -> str:
        response = await self._send("GET", "/models")
        asked = self._asked_model
        if response.status_code == 404 and asked:
            return asked  # a server without a model listing: trust the caller's name
        if response.status_code != 200:
            raise self._status_error(response, "/models")
        try:
            ids = [str(entry["id"]) for entry in response.json()["data"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise PlannerBackendError(f"{self.where}/models: malformed model listing") from exc
        if asked:
            if asked in ids or not ids:
                return asked
            raise PlannerBackendError(f"{self.where} serves {', '.join(ids[:8])}, not {asked!r}")
        if len(ids) == 1:
            return ids[0]
        if not ids:
            raise PlannerBackendError(f"{self.where}/models lists no model")
        raise PlannerBackendError(
            f"{self.where} serves {len(ids)} models ({', '.join(ids[:8])}): name one (--model)"
        )

    async def _detect_mode(self) -> OutputMode:
        for mode in OUTPUT_MODES[:-1]:
            if await self._honours(mode):
                return mode
        return "prompt"

    async def _honours(self, mode: OutputMode) -> bool:
        """Whether the server's reply in ``mode`` obeys a schema it cannot satisfy by chance."""
        token = secrets.token_hex(4)
        messages = [{"role": "user", "content": _PROBE_PROMPT}]
        payload = self._payload(messages, _probe_schema(token), mode, max_tokens=_PROBE_MAX_TOKENS)
        payload["temperature"] = 0.0
        response = await self._send("POST", "/chat/completions", payload)
        if response.status_code in (401, 403, 404):
            raise self._status_error(response, "/chat/completions")  # not about the mode
        if response.status_code != 200:
            # llama-cpp-python answers an unknown response_format with HTTP 500, others with 400/422
            logger.debug("%s: %s refused: HTTP %d", self.where, mode, response.status_code)
            return False
        try:
            raw, _ = self._reply(response.json(), mode)
            value = json.loads(raw)
        except (ValueError, KeyError, IndexError, TypeError):
            return False
        if mode == "json_object":
            return isinstance(value, dict)
        return isinstance(value, dict) and value.get("probe") == token

    # ------------------------------------------------------------------ planning

    def _payload(
        self, messages: list[dict[str, Any]], schema: dict[str, Any], mode: OutputMode, max_tokens: int
    ) -> dict[str, Any]:
        s = self.sampler
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": max_tokens,
            "seed": s.seed,
        }
        if mode == "json_schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "action", "schema": schema, "strict": True},
            }
        elif mode == "json_object_schema":
            payload["response_format"] = {"type": "json_object", "schema": schema}
        elif mode == "tool_choice":
            function = {"name": _ACTION_FUNCTION, "description": "Take the next action."}
            payload["tools"] = [{"type": "function", "function": {**function, "parameters": schema}}]
            payload["tool_choice"] = {"type": "function", "function": {"name": _ACTION_FUNCTION}}
        elif mode == "json_object":
            payload["response_format"] = {"type": "json_object"}
        return payload

    @staticmethod
    def _reply(body: Any, mode: OutputMode) -> tuple[str, dict[str, Any]]:
        """The raw action text and the choice; KeyError/TypeError/IndexError when malformed."""
        choice = body["choices"][0]
        message = choice["message"]
        calls = message.get("tool_calls") or []
        if mode == "tool_choice" and calls:
            arguments = calls[0]["function"]["arguments"]
            return (arguments if isinstance(arguments, str) else json.dumps(arguments)), choice
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise TypeError("content is not text")
        return content or "", choice

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        """POST /chat/completions and validate the reply into an Action."""
        await self.load()
        mode = self.output_mode
        assert mode != "auto"  # load() resolved it
        schema = action_json_schema(request.tools, request.kinds, request.skills, request.batch_groups,
                                    answers=request.answers)
        payload = self._payload(openai_messages(request.messages), schema, mode, self.sampler.max_tokens)
        t0 = time.monotonic()
        response = await self._send("POST", "/chat/completions", payload)
        if response.status_code != 200:
            raise self._status_error(response, "/chat/completions")
        try:
            body = response.json()
            raw, choice = self._reply(body, mode)
            usage = body.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens") or 0)
            cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
            completion_tokens = int(usage.get("completion_tokens") or 0)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise PlannerBackendError(
                f"{self.where}/chat/completions: malformed completion response ({type(exc).__name__}: {exc})"
            ) from exc
        turn = PlannerTurn(
            raw=raw,
            prompt_tokens=prompt_tokens,
            prompt_tokens_evaluated=max(0, prompt_tokens - cached),
            completion_tokens=completion_tokens,
            finish_reason=str(choice.get("finish_reason") or "stop"),
            latency_s=time.monotonic() - t0,
        )
        cut = f"output cut at max_tokens={self.sampler.max_tokens} before the action was complete"
        if turn.finish_reason == "length":
            raise PlannerOutputError(raw, cut, turn)
        try:
            action = parse_action(raw, request.tools, request.kinds)
        except PlannerOutputError as exc:
            # a forced tool call reports "tool_calls" even when max_tokens cut it
            reason = cut if completion_tokens >= self.sampler.max_tokens else exc.reason
            raise PlannerOutputError(raw, reason, turn) from exc
        return PlannerOutput(action=action, turn=turn)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()
