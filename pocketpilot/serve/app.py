"""The HTTP service: sessions, requests, their events as Server-Sent Events, answers, traces.

Every route under ``/v1`` needs the service's bearer token; every route about one session
also needs that session's key (``X-Session-Key``, handed to the client that created it).
Errors are ``{"error": {"code", "message"}}`` with one line of message and a status that says
whose fault it was (4xx: the request's; 503: the device's; 500: ours). ``/openapi.json``
describes it all.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import ModelNotInstalledError, PocketPilotError, UnknownModelError, UsageError
from .auth import check_bearer, trace_file
from .devices import DeviceFactory
from .errors import BadRequest, Invalid, PayloadTooLarge, ServeError, Unauthorized
from .events import sse_frame
from .openapi import openapi_schema
from .questions import Answer
from .sessions import MemoryBinding, PlannerFactory, RequestBody, ServeConfig, SessionCreate, SessionRegistry

__all__ = ["SESSION_KEY_HEADER", "create_app"]

logger = logging.getLogger(__name__)

SESSION_KEY_HEADER = "X-Session-Key"
M = TypeVar("M", bound=BaseModel)
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def _error(exc: ServeError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


class BearerAuth:
    """Refuses every ``/v1`` request without the service's bearer token (pure ASGI: streams pass)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self._token = app, token

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1") and scope.get("method") != "OPTIONS":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            try:
                check_bearer(headers.get("authorization"), self._token)
            except Unauthorized as exc:
                await _error(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _read_json(request: Request, model: type[M], limit: int) -> M:
    """The body as ``model``: size-limited while it streams in, then parsed, then validated."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"the body is {declared} bytes; at most {limit} are accepted")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise PayloadTooLarge(f"the body is over {limit} bytes")
    try:
        data = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the body is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BadRequest(f"the body must be a JSON object, not {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise Invalid(f"{where}: {first['msg']} ({exc.error_count()} error(s))") from exc


class _Api:
    """The ``/v1`` endpoints over one session registry: each method is one route."""

    def __init__(self, registry: SessionRegistry, limit: int) -> None:
        self.registry, self.limit = registry, limit

    def routes(self) -> list[Route]:
        """The routes, in the order ``/openapi.json`` lists them."""
        return [
            Route("/openapi.json", _schema, methods=["GET"]),
            Route("/v1/sessions", self.create_session, methods=["POST"]),
            Route("/v1/sessions/{sid}", self.get_session, methods=["GET"]),
            Route("/v1/sessions/{sid}", self.delete_session, methods=["DELETE"]),
            Route("/v1/sessions/{sid}/requests", self.post_request, methods=["POST"]),
            Route("/v1/sessions/{sid}/requests/current", self.cancel_request, methods=["DELETE"]),
            Route("/v1/sessions/{sid}/events", self.events, methods=["GET"]),
            Route("/v1/sessions/{sid}/answers", self.post_answer, methods=["POST"]),
            Route("/v1/sessions/{sid}/traces/{name}", self.get_trace, methods=["GET"]),
        ]

    def session_of(self, request: Request) -> Any:
        """The session the path names, if the request holds its key."""
        return self.registry.get(request.path_params["sid"], request.headers.get(SESSION_KEY_HEADER))

    async def create_session(self, request: Request) -> Response:
        """``POST /v1/sessions``: open a device under a model and η; the key goes to this client only."""
        spec = await _read_json(request, SessionCreate, self.limit)
        session = await self.registry.create(spec)
        return JSONResponse({"id": session.id, "key": session.key, "status": session.status().model_dump(mode="json")},
                            status_code=201)

    async def get_session(self, request: Request) -> Response:
        """``GET /v1/sessions/{sid}``: the session's status."""
        return JSONResponse(self.session_of(request).status().model_dump(mode="json"))

    async def delete_session(self, request: Request) -> Response:
        """``DELETE /v1/sessions/{sid}``: end the session (its run cancelled)."""
        await self.registry.close(request.path_params["sid"], request.headers.get(SESSION_KEY_HEADER))
        return JSONResponse({"closed": True})

    async def post_request(self, request: Request) -> Response:
        """``POST .../requests``: queue a request on the session's conversation."""
        session = self.session_of(request)
        body = await _read_json(request, RequestBody, self.limit)
        turn = session.submit(body.request)
        return JSONResponse({"turn": turn, "events": f"/v1/sessions/{session.id}/events"}, status_code=202)

    async def cancel_request(self, request: Request) -> Response:
        """``DELETE .../requests/current``: cancel the running request."""
        return JSONResponse({"cancelled": await self.session_of(request).cancel()})

    async def post_answer(self, request: Request) -> Response:
        """``POST .../answers``: answer the pending question."""
        session = self.session_of(request)
        answer = await _read_json(request, Answer, self.limit)
        question = session.answer(answer)
        return JSONResponse({"question": question.model_dump(mode="json"), "answer": answer.answer})

    async def events(self, request: Request) -> Response:
        """``GET .../events``: the session's events as SSE, from after ``Last-Event-ID``."""
        session = self.session_of(request)
        raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        if not raw.strip().isdigit():
            raise Invalid(f"Last-Event-ID must be an event number, not {raw!r}", "invalid_event_id")
        after = int(raw)

        async def stream() -> AsyncIterator[bytes]:
            yield b"retry: 1000\n\n"
            async with contextlib.aclosing(session.log.follow(after)) as items:  # a gone client stops reading now
                async for item in items:
                    yield b": keepalive\n\n" if item is None else sse_frame(item)

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def get_trace(self, request: Request) -> Response:
        """``GET .../traces/{name}``: a run's trace as JSONL, an HTML replay or an OpenAI chat request."""
        session = self.session_of(request)
        path = trace_file(session.trace_dir, request.path_params["name"])
        form = request.query_params.get("format", "jsonl")
        if form == "jsonl":
            return FileResponse(path, media_type="application/x-ndjson")
        if form not in ("html", "chat"):
            raise Invalid(f"format is jsonl, html or chat, not {form!r}", "invalid_format")
        from ..tracing.trace import episode_to_chat, read_trace

        episode, complete = read_trace(path)
        if form == "chat":  # the run as an OpenAI chat request (an export for trainers)
            return JSONResponse(episode_to_chat(episode))
        from ..tracing.replay import render_replay

        return HTMLResponse(render_replay(episode, complete))


async def _schema(request: Request) -> Response:
    return JSONResponse(openapi_schema())


async def _console_page(request: Request) -> Response:
    from .console import console_html

    return HTMLResponse(console_html(), headers={"Content-Security-Policy": "default-src 'self'; "
                                                 "style-src 'unsafe-inline'; script-src 'unsafe-inline'"})


async def _on_serve_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServeError)
    return _error(exc)


async def _on_typed_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, UsageError):
        return _error(Invalid(str(exc), "invalid_request"))
    if isinstance(exc, (UnknownModelError, ModelNotInstalledError)):  # the client named it
        return _error(Invalid(str(exc), "invalid_model"))
    logger.exception("%s %s failed", request.method, request.url.path)
    return _error(ServeError(f"{type(exc).__name__}: {exc}"))


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "no_route", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    err = ServeError(str(exc.detail), code)
    err.status = exc.status_code
    return _error(err)


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    logger.exception("%s %s failed", request.method, request.url.path)
    return _error(ServeError(f"internal error: {type(exc).__name__}"))


def create_app(config: ServeConfig, planners: PlannerFactory, *, token: str, devices: DeviceFactory | None = None,
               memory: MemoryBinding | None = None, kit: Any = None, console: bool = True) -> Starlette:
    """The service as an ASGI app (uvicorn runs it; tests may too).

    Args:
        config: trace folder, timeouts, limits, CORS origins.
        planners: a planner per model name (``pocketpilot serve`` passes the model store's;
            tests pass scripted planners).
        token: the bearer token every ``/v1`` request must carry.
        devices: opens a session's device (default: sandbox, adb, the configured MCP servers).
        memory: the memory store sessions search, each through its owner's caller.
        kit: the harness kit under the operator's η (:class:`~pocketpilot.evaluation.task_episode.HarnessKit`;
            None: the built-in one).
        console: serve the live console page at ``/``.
    """
    registry = SessionRegistry(config, planners, devices, memory, kit)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await registry.aclose()

    routes = _Api(registry, config.max_body_bytes).routes()
    if console:
        routes.append(Route("/", _console_page, methods=["GET"]))
    middleware = [Middleware(BearerAuth, token=token)]
    if config.cors_origins:
        middleware.insert(0, Middleware(CORSMiddleware, allow_origins=list(config.cors_origins),
                                        allow_methods=["GET", "POST", "DELETE"],
                                        allow_headers=["Authorization", "Content-Type", SESSION_KEY_HEADER,
                                                       "Last-Event-ID"]))
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan,
                    exception_handlers={ServeError: _on_serve_error, PocketPilotError: _on_typed_error,
                                        HTTPException: _on_http_error, Exception: _on_unexpected})
    app.state.registry = registry
    return app
