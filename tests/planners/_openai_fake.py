"""A strict OpenAI-style chat server on loopback (stdlib http.server in a thread), for fast tests.

It checks what real servers check, and a little more: every ``tool`` message answers a
``tool_call_id`` of the assistant message just before it, every call is answered before the
conversation moves on, ids are unique, assistant ``content`` is never ``null``
(llama-cpp-python rejects it), arguments are JSON strings. A request that breaks a rule gets
HTTP 500, as llama-cpp-python answers it, and the problem is kept in ``problems``.

Structured output: ``honours`` lists the modes it enforces, ``rejects`` those it refuses
(HTTP 500); any other mode is silently ignored, as some servers do. A probe (a request of
one user message: a planner's context starts with its rules) gets an answer that obeys the
schema's constants only in an honoured mode.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ROLES = {"system", "user", "assistant", "tool"}


def message_problems(messages: Any) -> list[str]:
    """Every way ``messages`` breaks the OpenAI tool-calling conversation rules."""
    if not isinstance(messages, list) or not messages:
        return ["messages must be a non-empty list"]
    problems: list[str] = []
    pending: list[str] = []  # ids of the last assistant turn not answered yet
    seen: set[str] = set()
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ROLES:
            problems.append(f"{i}: bad role {role!r}")
            continue
        if role != "tool" and pending:
            problems.append(f"{i}: calls {pending} not answered before a {role} message")
            pending = []
        if "content" in m and not isinstance(m["content"], str):
            problems.append(f"{i}: {role} content is {type(m['content']).__name__}, not a string")
        if role == "tool":
            cid = m.get("tool_call_id")
            if cid not in pending:
                problems.append(f"{i}: tool message answers {cid!r}, not a pending call of the previous assistant")
            else:
                pending.remove(cid)
            continue
        if role == "assistant" and "tool_calls" in m:
            calls = m["tool_calls"]
            if not isinstance(calls, list) or not calls:
                problems.append(f"{i}: tool_calls must be a non-empty list")
                continue
            for call in calls:
                cid = call.get("id")
                fn = call.get("function") or {}
                if not isinstance(cid, str) or not cid or cid in seen:
                    problems.append(f"{i}: call id {cid!r} missing or reused")
                seen.add(cid)
                if call.get("type") != "function" or not isinstance(fn.get("name"), str):
                    problems.append(f"{i}: call {cid!r} is not a named function call")
                try:
                    if not isinstance(json.loads(fn.get("arguments")), dict):
                        raise ValueError
                except (TypeError, ValueError):
                    problems.append(f"{i}: call {cid!r} arguments are not a JSON object string")
                pending.append(cid)
        elif not isinstance(m.get("content"), str):
            problems.append(f"{i}: {role} message without text content")
    if pending:
        problems.append(f"end: calls {pending} not answered")
    return problems


def request_mode(body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The structured-output mode a request asks for, and its schema."""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return "json_schema", fmt["json_schema"]["schema"]
    if isinstance(fmt, dict) and fmt.get("type") == "json_object":
        return ("json_object_schema", fmt["schema"]) if "schema" in fmt else ("json_object", None)
    if body.get("tools") and isinstance(body.get("tool_choice"), dict):
        name = body["tool_choice"]["function"]["name"]
        tool = next(t for t in body["tools"] if t["function"]["name"] == name)
        return "tool_choice", tool["function"]["parameters"]
    return "prompt", None


class FakeOpenAI:
    """Scripted replies behind strict request checks; ``requests`` keeps every chat body."""

    def __init__(
        self,
        replies: list[str] | None = None,
        *,
        models: tuple[str, ...] = ("fake-planner-7b",),
        honours: tuple[str, ...] = ("json_object_schema",),
        rejects: tuple[str, ...] = ("json_schema",),
        api_key: str | None = None,
        fail_at: int | None = None,
        delay_s: float = 0.0,
    ) -> None:
        self.replies = list(replies or [])
        self.models, self.honours, self.rejects = models, honours, rejects
        self.api_key, self.fail_at, self.delay_s = api_key, fail_at, delay_s
        self.requests: list[dict[str, Any]] = []
        """Chat bodies of real (non-probe) requests, in order."""
        self.probes: list[str] = []
        """Modes the planner probed, in order."""
        self.problems: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.url = ""

    def _chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        mode, schema = request_mode(body)
        messages = body.get("messages")
        probe = isinstance(messages, list) and len(messages) == 1  # a planner's context starts with its rules
        if probe:
            self.probes.append(mode)
        problems = message_problems(body.get("messages"))
        if problems:
            self.problems.extend(problems)
            return 500, {"error": {"message": "; ".join(problems), "type": "internal_server_error"}}
        if mode in self.rejects:
            return 500, {"error": {"message": f"response_format {mode} is not supported"}}
        constrained = mode in self.honours
        if probe:
            text = "Sure! Here is a JSON object for you."
            if constrained and schema is not None:
                first = next(iter(schema.get("$defs", {}).values()), schema)  # the probe's one variant
                text = json.dumps({name: p["const"] for name, p in first["properties"].items() if "const" in p})
            elif constrained:
                text = '{"hello": "world"}'
        else:
            self.requests.append(body)
            if self.fail_at is not None and len(self.requests) == self.fail_at:
                return 500, {"error": {"message": "upstream exploded"}}
            text = self.replies.pop(0) if self.replies else '{"kind":"finish","summary":"out of script"}'
        if mode == "tool_choice" and constrained:
            name = body["tool_choice"]["function"]["name"]
            call = {"id": "call_x", "type": "function", "function": {"name": name, "arguments": text}}
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": text}, "stop"
        return 200, {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the timeout test)

            def _authorised(self) -> bool:
                fake.headers.append(dict(self.headers))
                if fake.api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                    self._send(401, {"error": {"message": "Incorrect API key provided"}})
                    return False
                return True

            def do_GET(self) -> None:
                if not self._authorised():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in fake.models]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                if not self._authorised():
                    return
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found"}})
                    return
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                self._send(*fake._chat(body))

        return Handler

    @contextmanager
    def running(self) -> Iterator[FakeOpenAI]:
        """Serve on a free loopback port for the duration of the block."""
        server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
