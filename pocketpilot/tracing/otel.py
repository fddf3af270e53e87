"""OpenTelemetry spans of runs, following the GenAI semantic conventions (the ``otel`` extra).

:class:`OtelObserver` adapts the harness's :mod:`~pocketpilot.harness.observer` events:

- one ``invoke_agent {agent}`` span per run (``gen_ai.conversation.id`` = the episode id),
  nested in the caller's current span, or for a sub-agent in its parent's hand-off span;
- one ``chat {model}`` span per planner call, with ``gen_ai.usage.input_tokens`` /
  ``output_tokens`` (and the KV-cache hits as ``gen_ai.usage.cache_read.input_tokens``);
- one ``execute_tool {tool}`` span per tool call, error status when it failed (held by a gate,
  denied, or a tool error): the call ids are unique per run, so concurrent calls stay apart;
- one ``execute_tool delegate`` span per hand-off, the sub-agent's ``invoke_agent`` inside it
  (the conventions' agent-as-a-tool shape).

Argument and result values are private user data on a phone: they are recorded only with
``capture_content=True``. Nothing here needs a vendor: :func:`console_exporter` prints spans,
:func:`otlp_exporter` sends them to any OTLP/HTTP collector.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO
from urllib.parse import urlsplit

from ..contracts import Episode, digest
from ..errors import UsageError
from ..harness.observer import (
    CallEnded,
    CallStarted,
    DelegateEnded,
    DelegateStarted,
    PlanEnded,
    PlanStarted,
    RunEnded,
    RunEvent,
    RunStarted,
)

__all__ = ["OtelObserver", "console_exporter", "otlp_exporter", "require_otel", "tracer_provider"]

_FAILED_STOPS = frozenset({"planner_error", "device_lost"})
"""Stop reasons that mean the run broke (an agent span with error status); a refusal or an
exhausted budget is an outcome, not an error."""
_IN_PROCESS = ("llama.cpp", "scripted")


def require_otel(*, sdk: bool = True) -> None:
    """Raise a one-line UsageError when the ``otel`` extra is missing.

    Spans need only the OpenTelemetry API (an application may bring its own SDK or none);
    exporting them needs the SDK, which the extra installs.
    """
    try:
        if sdk:
            import opentelemetry.sdk.trace  # noqa: F401
        else:
            import opentelemetry.trace  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            "OpenTelemetry export needs the optional extra: pip install 'pocketpilot[otel]'"
        ) from exc


def _provider_name(backend: str) -> str:
    """``gen_ai.provider.name``: the backend kind (``llama_cpp``, ``openai_compat``...); an
    endpoint's address goes in ``server.address``, not in the name.
    """
    return backend.split(":", 1)[0].replace(".", "_").replace("-", "_")


class OtelObserver:
    """A :class:`~pocketpilot.harness.observer.RunObserver` that records spans on an OTel tracer.

    Args:
        tracer_provider: where spans go (default: the global provider; pass your own to keep
            pocketpilot's spans apart, as the CLI does).
        agent_name: ``gen_ai.agent.name`` of top-level runs (sub-agents get ``.subagent``).
        agent_id: ``gen_ai.agent.id``; default: a digest of the planner model, the tools and
            the η version, so runs of the same configuration share an id.
        capture_content: also record tool arguments and results (off: they are user data).
    """

    def __init__(
        self,
        tracer_provider: Any = None,
        *,
        agent_name: str = "pocketpilot",
        agent_id: str | None = None,
        capture_content: bool = False,
    ) -> None:
        require_otel(sdk=False)
        from opentelemetry import trace

        from .._version import __version__

        self._trace = trace
        self._tracer = trace.get_tracer("pocketpilot", __version__, tracer_provider=tracer_provider)
        self.agent_name = agent_name
        self.agent_id = agent_id
        self.capture_content = capture_content
        self._runs: dict[str, Any] = {}
        self._chats: dict[tuple[str, int], Any] = {}
        self._calls: dict[str, Any] = {}
        self._delegates: dict[tuple[str, int], Any] = {}
        self._open: dict[str, list[Any]] = {}
        """Spans still open per episode, ended with the run whatever happened."""

    # ------------------------------------------------------------------ the protocol

    def observe(self, event: RunEvent) -> None:
        """Start or end the span the event stands for."""
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            handler(event)

    # ------------------------------------------------------------------ helpers

    def _start(self, episode_id: str, name: str, parent: Any, kind: Any, attributes: dict[str, Any]) -> Any:
        context = self._trace.set_span_in_context(parent) if parent is not None else None
        span = self._tracer.start_span(name, context=context, kind=kind, attributes=attributes)
        self._open.setdefault(episode_id, []).append(span)
        return span

    def _end(
        self, episode_id: str, span: Any, error: str | None = None, error_type: str | None = None
    ) -> None:
        if span is None:
            return
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_attribute("error.type", error_type or "error")
            span.set_status(Status(StatusCode.ERROR, error))
        span.end()
        spans = self._open.get(episode_id, [])
        if span in spans:
            spans.remove(span)

    def _agent_id(self, event: RunStarted) -> str:
        if self.agent_id is not None:
            return self.agent_id
        header = event.header
        planner = header.planner
        return digest([planner.model, planner.model_sha256, sorted(t.name for t in header.tools),
                       header.eta_version])[:16]

    # ------------------------------------------------------------------ runs

    def _on_run_started(self, event: RunStarted) -> None:
        from opentelemetry.trace import SpanKind

        header = event.header
        name = self.agent_name if event.depth == 0 else f"{self.agent_name}.subagent"
        parent = None
        if header.parent_episode_id is not None and event.parent_step is not None:
            parent = self._delegates.get((header.parent_episode_id, event.parent_step))
            parent = parent or self._runs.get(header.parent_episode_id)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "gen_ai.agent.id": self._agent_id(event),
            "gen_ai.conversation.id": header.episode_id,
            "gen_ai.provider.name": _provider_name(header.planner.backend),
            "gen_ai.system": _provider_name(header.planner.backend),
            "gen_ai.request.model": header.planner.model,
            "pocketpilot.depth": event.depth,
            "pocketpilot.tools": [t.name for t in header.tools],
        }
        if header.task_id:
            attributes["pocketpilot.task.id"] = header.task_id
        if header.eta_version:
            attributes["pocketpilot.eta_version"] = header.eta_version
        if header.parent_episode_id:
            attributes["pocketpilot.parent_episode_id"] = header.parent_episode_id
        if header.planner.model_sha256:
            attributes["pocketpilot.model.sha256"] = header.planner.model_sha256
        self._runs[event.episode_id] = self._start(
            event.episode_id, f"invoke_agent {name}", parent, SpanKind.INTERNAL, attributes
        )

    def _on_run_ended(self, event: RunEnded) -> None:
        span = self._runs.pop(event.episode_id, None)
        left = [s for s in self._open.get(event.episode_id, []) if s is not span]
        for table in (self._chats, self._calls, self._delegates):
            for key in [k for k, s in table.items() if s in left]:
                del table[key]
        for other in reversed(left):  # a call or plan the run was cancelled in
            self._end(event.episode_id, other, "the run ended first", "cancelled")
        self._open.pop(event.episode_id, None)
        if span is None:
            return
        if event.episode is None:
            self._end(event.episode_id, span, event.error or "the run raised", "exception")
            return
        error = self._describe_end(span, event.episode)
        self._end(event.episode_id, span, *(error or (None, None)))

    @staticmethod
    def _describe_end(span: Any, episode: Episode) -> tuple[str, str] | None:
        usage = episode.usage()
        span.set_attribute("pocketpilot.stop_reason", episode.stop_reason or "")
        span.set_attribute("pocketpilot.steps", len(episode.steps))
        span.set_attribute("gen_ai.usage.input_tokens", int(usage.get("prompt_tokens", 0)))
        span.set_attribute("gen_ai.usage.output_tokens", int(usage.get("completion_tokens", 0)))
        if episode.verdict is not None:
            span.set_attribute("pocketpilot.verdict.success", bool(episode.verdict.success))
        if episode.stop_reason in _FAILED_STOPS:
            return episode.stop_detail or episode.stop_reason or "failed", episode.stop_reason or "failed"
        return None

    # ------------------------------------------------------------------ planner calls

    def _on_plan_started(self, event: PlanStarted) -> None:
        from opentelemetry.trace import SpanKind

        info, sampler = event.planner, event.planner.sampler
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _provider_name(info.backend),
            "gen_ai.system": _provider_name(info.backend),
            "gen_ai.request.model": info.model,
            "gen_ai.conversation.id": event.episode_id,
            "gen_ai.request.temperature": sampler.temperature,
            "gen_ai.request.top_p": sampler.top_p,
            "gen_ai.request.top_k": sampler.top_k,
            "gen_ai.request.max_tokens": sampler.max_tokens,
            "gen_ai.output.type": "json",
            "pocketpilot.step": event.step,
        }
        if sampler.seed is not None:
            attributes["gen_ai.request.seed"] = sampler.seed
        if info.backend.startswith("openai-compat:"):
            url = urlsplit(info.backend.split(":", 1)[1])
            if url.hostname:
                attributes["server.address"] = url.hostname
            if url.port:
                attributes["server.port"] = url.port
        kind = SpanKind.INTERNAL if info.backend in _IN_PROCESS else SpanKind.CLIENT
        self._chats[(event.episode_id, event.step)] = self._start(
            event.episode_id, f"chat {info.model}", self._runs.get(event.episode_id), kind, attributes
        )

    def _on_plan_ended(self, event: PlanEnded) -> None:
        span = self._chats.pop((event.episode_id, event.step), None)
        if span is None:
            return
        turn = event.turn
        if turn is not None:
            span.set_attribute("gen_ai.usage.input_tokens", turn.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", turn.completion_tokens)
            span.set_attribute("gen_ai.usage.cache_read.input_tokens",
                               max(0, turn.prompt_tokens - turn.prompt_tokens_evaluated))
            span.set_attribute("gen_ai.response.finish_reasons", [turn.finish_reason])
        self._end(event.episode_id, span, event.error, event.error_type)

    # ------------------------------------------------------------------ tool calls

    def _on_call_started(self, event: CallStarted) -> None:
        from opentelemetry.trace import SpanKind

        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.call.name,
            "gen_ai.tool.call.id": event.call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": event.episode_id,
            "pocketpilot.step": event.step,
        }
        if event.spec is not None:
            if event.spec.description:
                attributes["gen_ai.tool.description"] = event.spec.description
            spec = event.spec  # the declared semantics, as the harness's policies read them
            attributes.update({"pocketpilot.tool.read_only": spec.read_only,
                               "pocketpilot.tool.destructive": spec.destructive,
                               "pocketpilot.tool.open_world": spec.open_world})
            if spec.effect is not None:
                attributes["pocketpilot.tool.effect"] = spec.effect
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(event.call.arguments, ensure_ascii=False,
                                                                  default=str)
        self._calls[event.call_id] = self._start(
            event.episode_id, f"execute_tool {event.call.name}", self._runs.get(event.episode_id),
            SpanKind.INTERNAL, attributes,
        )

    def _on_call_ended(self, event: CallEnded) -> None:
        span = self._calls.pop(event.call_id, None)
        if span is None:
            return
        result = event.result
        if result is None:
            self._end(event.episode_id, span, event.error or "the executor raised", event.error_type)
            return
        if self.capture_content:
            span.set_attribute("gen_ai.tool.call.result", result.model_dump_json(exclude_defaults=True))
        if result.error is not None:
            self._end(event.episode_id, span, result.error.message, result.error.code)
        else:
            self._end(event.episode_id, span)

    # ------------------------------------------------------------------ hand-offs

    def _on_delegate_started(self, event: DelegateStarted) -> None:
        from opentelemetry.trace import SpanKind

        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "delegate",
            "gen_ai.tool.call.id": event.call_id,
            "gen_ai.tool.type": "agent",
            "gen_ai.conversation.id": event.episode_id,
            "pocketpilot.step": event.step,
            "pocketpilot.delegate.tools": list(event.action.tools),
        }
        self._delegates[(event.episode_id, event.step)] = self._start(
            event.episode_id, "execute_tool delegate", self._runs.get(event.episode_id), SpanKind.INTERNAL,
            attributes,
        )

    def _on_delegate_ended(self, event: DelegateEnded) -> None:
        span = self._delegates.pop((event.episode_id, event.step), None)
        if span is None:
            return
        result = event.result
        if result is None:
            self._end(event.episode_id, span, event.error or "the hand-off raised", "exception")
        elif result.error is not None:
            self._end(event.episode_id, span, result.error.message, result.error.code)
        else:
            self._end(event.episode_id, span)


# ---------------------------------------------------------------------- exporters


def console_exporter(out: TextIO | None = None) -> Any:
    """Spans printed as JSON, one object per span (default: stderr, so a run's output stays clean)."""
    require_otel()
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    return ConsoleSpanExporter(out=out or sys.stderr)


def otlp_exporter(url: str | None = None, *, timeout_s: float = 5.0) -> Any:
    """OTLP over HTTP/protobuf to a collector (Jaeger, Grafana Tempo, an OpenTelemetry Collector).

    ``url`` may be a base (``http://host:4318``) or the full traces endpoint; None uses
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` or localhost:4318.
    """
    require_otel()
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise UsageError("OTLP export needs the optional extra: pip install 'pocketpilot[otel]'") from exc
    if url is None:
        return OTLPSpanExporter(timeout=timeout_s)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"not an http(s) OTLP URL: {url!r}")
    if parts.path in ("", "/"):
        url = url.rstrip("/") + "/v1/traces"
    return OTLPSpanExporter(endpoint=url, timeout=timeout_s)


def tracer_provider(
    exporters: Sequence[Any], *, service_name: str = "pocketpilot", batch: bool = True
) -> Any:
    """A fresh TracerProvider (not the global one) that sends spans to ``exporters``.

    Call its ``shutdown()`` at the end: that flushes what the batch processor still holds.
    """
    require_otel()
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    from .._version import __version__

    provider = TracerProvider(resource=Resource.create({"service.name": service_name,
                                                        "service.version": __version__}))
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    return provider
