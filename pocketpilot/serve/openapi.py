"""The service's OpenAPI 3.1 document, built from the same pydantic models the routes validate with.

Hand-assembled rather than generated from docstrings: the request and response bodies are
the models themselves, so the document cannot drift from what the service accepts.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import models_json_schema

from .._version import __version__
from .questions import Answer, Question
from .sessions import RequestBody, SessionCreate, SessionStatus

__all__ = ["openapi_schema"]


class ErrorBody(BaseModel):
    """Every error: ``{"error": {"code": ..., "message": ...}}`` (one line of message)."""

    model_config = ConfigDict(title="Error")
    error: dict[str, str]


class SessionCreated(BaseModel):
    """The new session: its id, and the key only its creator holds."""

    id: str
    key: str
    status: SessionStatus


_REF = "#/components/schemas/{model}"


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": _REF.format(model=model.__name__)}


def _json(model: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    schema = _ref(model) if isinstance(model, type) else model
    return {"content": {"application/json": {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    return {str(s): {"description": "error", **_json(ErrorBody)} for s in statuses}


_SID = [{"name": "sid", "in": "path", "required": True, "schema": {"type": "string"}},
        {"name": "X-Session-Key", "in": "header", "required": True, "schema": {"type": "string"},
         "description": "The key returned when the session was created: only its holder may use the session."}]


@cache
def openapi_schema() -> dict[str, Any]:
    """The OpenAPI document served at ``/openapi.json``."""
    models = [SessionCreate, SessionCreated, SessionStatus, RequestBody, Answer, Question, ErrorBody]
    _, defs = models_json_schema([(m, "validation") for m in models], ref_template=_REF)
    session_errors = _errors(401, 403, 404)
    return {
        "openapi": "3.1.0",
        "info": {"title": "pocketpilot serve", "version": __version__,
                 "description": "Sessions on phones, their steps as Server-Sent Events, and confirmations "
                                "and questions as round trips."},
        "components": {"schemas": defs.get("$defs", {}),
                       "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": {
            "/v1/sessions": {"post": {
                "summary": "Open a session on a device", "requestBody": {"required": True, **_json(SessionCreate)},
                "responses": {"201": {"description": "created", **_json(SessionCreated)},
                              **_errors(400, 401, 409, 413, 422, 503)}}},
            "/v1/sessions/{sid}": {
                "parameters": _SID,
                "get": {"summary": "The session's state", "responses": {
                    "200": {"description": "status", **_json(SessionStatus)}, **session_errors}},
                "delete": {"summary": "End the session (its run is cancelled, its traces kept)", "responses": {
                    "200": {"description": "closed"}, **session_errors}}},
            "/v1/sessions/{sid}/requests": {"parameters": _SID, "post": {
                "summary": "Send the next request of the conversation",
                "requestBody": {"required": True, **_json(RequestBody)},
                "responses": {"202": {"description": "accepted: watch the events"},
                              **session_errors, **_errors(400, 409, 413, 422, 503)}}},
            "/v1/sessions/{sid}/requests/current": {"parameters": _SID, "delete": {
                "summary": "Cancel the request in progress (its trace ends as cancelled)",
                "responses": {"200": {"description": "whether a run was cancelled"}, **session_errors}}},
            "/v1/sessions/{sid}/events": {"parameters": [*_SID, {
                "name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "integer"},
                "description": "Resume after this event: every later event comes exactly once."}], "get": {
                "summary": "The session's events as Server-Sent Events: each run's trace records "
                           "(header, step, end) as written, plus request, question, answer, state, error, "
                           "expired (an idle session closing) and gap (an old trace line no longer readable)",
                "responses": {"200": {"description": "event stream",
                                      "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                              **session_errors}}},
            "/v1/sessions/{sid}/answers": {"parameters": _SID, "post": {
                "summary": "Answer a pending confirmation (allow/deny) or question (text)",
                "requestBody": {"required": True, **_json(Answer)},
                "responses": {"200": {"description": "answered"},
                              **session_errors, **_errors(400, 409, 413, 422)}}},
            "/v1/sessions/{sid}/traces/{name}": {"parameters": [*_SID, {
                "name": "name", "in": "path", "required": True, "schema": {"type": "string"},
                "description": "An episode id of this session"}, {
                "name": "format", "in": "query", "required": False, "schema": {"enum": ["jsonl", "html", "chat"]}}],
                "get": {"summary": "A run's trace file, its HTML replay, or its OpenAI chat export",
                        "responses": {"200": {"description": "the trace"}, **session_errors}}},
        },
    }
