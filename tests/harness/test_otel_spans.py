"""OpenTelemetry spans of a run (GenAI conventions), recorded with the SDK's in-memory exporter."""

from __future__ import annotations

import sys

import pytest
from scripted_actions import call

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from pocketpilot.errors import UsageError  # noqa: E402
from pocketpilot.executor.sandbox import EVERYDAY_APPS, SandboxExecutor, SandboxPhone  # noqa: E402
from pocketpilot.harness import AllowAll, Session  # noqa: E402
from pocketpilot.harness.base import PlannerOutput, PlanRequest  # noqa: E402
from pocketpilot.harness.observer import RunEvent  # noqa: E402
from pocketpilot.harness.planners import ScriptedPlanner  # noqa: E402
from pocketpilot.tracing.otel import OtelObserver, console_exporter, otlp_exporter  # noqa: E402


class CountingPlanner(ScriptedPlanner):
    """A scripted planner that reports prompt tokens, as a real backend does."""

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        out = await super().plan(request)
        prompt = sum(self.count_tokens(m.content) for m in request.messages)
        turn = out.turn.model_copy(update={"prompt_tokens": prompt, "prompt_tokens_evaluated": prompt // 2})
        return PlannerOutput(action=out.action, turn=turn)


@pytest.fixture
def spans_of():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter, OtelObserver(provider)
    provider.shutdown()


async def test_two_tool_steps_and_finish(spans_of):
    exporter, observer = spans_of
    phone = SandboxPhone()
    planner = CountingPlanner([
        call("set_wifi", enabled=False),
        call("read_note", note_id="no-such-note"),  # fails: not_found
        {"kind": "finish", "summary": "wifi is off"},
    ])
    episode = await Session(planner, SandboxExecutor(phone, EVERYDAY_APPS), observer=observer).run("turn wifi off")
    assert episode.stop_reason == "finish" and phone.state.settings.wifi is False
    spans = exporter.get_finished_spans()
    by_op: dict[str, list] = {}
    for s in spans:
        by_op.setdefault(s.attributes["gen_ai.operation.name"], []).append(s)
    assert {k: len(v) for k, v in by_op.items()} == {"invoke_agent": 1, "chat": 3, "execute_tool": 2}
    (agent,) = by_op["invoke_agent"]
    assert agent.name == "invoke_agent pocketpilot" and agent.parent is None
    assert agent.attributes["gen_ai.conversation.id"] == episode.header.episode_id
    assert agent.attributes["gen_ai.agent.name"] == "pocketpilot" and agent.attributes["gen_ai.agent.id"]
    assert agent.attributes["pocketpilot.stop_reason"] == "finish"
    assert agent.status.status_code is StatusCode.UNSET
    for chat, step in zip(sorted(by_op["chat"], key=lambda s: s.start_time), episode.steps, strict=True):
        assert chat.name == "chat scripted" and chat.parent.span_id == agent.context.span_id
        assert chat.context.trace_id == agent.context.trace_id
        assert chat.attributes["gen_ai.request.model"] == "scripted"
        assert chat.attributes["gen_ai.provider.name"] == "scripted"
        assert chat.attributes["gen_ai.usage.input_tokens"] == step.planner.prompt_tokens > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] == step.planner.completion_tokens > 0
        assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == (
            step.planner.prompt_tokens - step.planner.prompt_tokens_evaluated)
    wifi, note = sorted(by_op["execute_tool"], key=lambda s: s.start_time)
    assert wifi.name == "execute_tool set_wifi" and note.name == "execute_tool read_note"
    for tool in (wifi, note):
        assert tool.parent.span_id == agent.context.span_id
        assert agent.start_time <= tool.start_time <= tool.end_time <= agent.end_time
    assert wifi.attributes["gen_ai.tool.name"] == "set_wifi"
    assert wifi.attributes["pocketpilot.tool.effect"] == "setting" and note.attributes["pocketpilot.tool.read_only"]
    assert wifi.attributes["gen_ai.tool.call.id"] != note.attributes["gen_ai.tool.call.id"]
    assert wifi.status.status_code is StatusCode.UNSET
    assert note.status.status_code is StatusCode.ERROR
    assert note.attributes["error.type"] == episode.steps[1].results[0].error.code
    assert "gen_ai.tool.call.arguments" not in wifi.attributes  # user data stays out by default


async def test_parallel_calls_and_content_capture():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observer = OtelObserver(provider, capture_content=True, agent_id="phone-agent")
    planner = ScriptedPlanner([
        {"kind": "tool_call", "calls": [{"name": "set_wifi", "arguments": {"enabled": True}},
                                        {"name": "set_bluetooth", "arguments": {"enabled": False}}]},
        {"kind": "finish", "summary": "done"},
    ])
    await Session(planner, SandboxExecutor(SandboxPhone(), EVERYDAY_APPS), observer=observer).run("wifi on, bluetooth off")
    tools = [s for s in exporter.get_finished_spans() if s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert sorted(s.attributes["gen_ai.tool.name"] for s in tools) == ["set_bluetooth", "set_wifi"]
    assert len({s.attributes["gen_ai.tool.call.id"] for s in tools}) == 2
    wifi = next(s for s in tools if s.attributes["gen_ai.tool.name"] == "set_wifi")
    assert '"enabled": true' in wifi.attributes["gen_ai.tool.call.arguments"]
    assert "gen_ai.tool.call.result" in wifi.attributes
    (agent,) = [s for s in exporter.get_finished_spans() if s.attributes["gen_ai.operation.name"] == "invoke_agent"]
    assert agent.attributes["gen_ai.agent.id"] == "phone-agent"
    provider.shutdown()


async def test_subagent_nests_under_the_delegating_step(spans_of):
    exporter, observer = spans_of
    notes = ["create_note", "list_notes", "read_note"]
    planner = ScriptedPlanner([
        {"kind": "delegate", "instruction": "Save a note: parked on level 3", "tools": notes},
        call("create_note", title="Parking", body="Level 3"),  # the child
        {"kind": "finish", "summary": "saved"},  # the child
        {"kind": "finish", "summary": "noted"},
    ])
    session = Session(planner, SandboxExecutor(SandboxPhone(), EVERYDAY_APPS), tools=notes, confirm=AllowAll(), observer=observer)
    episode = await session.run("note my parking spot")
    assert episode.stop_reason == "finish"
    spans = exporter.get_finished_spans()
    agents = [s for s in spans if s.attributes["gen_ai.operation.name"] == "invoke_agent"]
    parent = next(s for s in agents if s.parent is None)
    child = next(s for s in agents if s.parent is not None)
    (handoff,) = [s for s in spans if s.name == "execute_tool delegate"]
    assert handoff.parent.span_id == parent.context.span_id
    assert child.parent.span_id == handoff.context.span_id  # the sub-agent runs inside the step's hand-off
    assert child.attributes["gen_ai.agent.name"] == "pocketpilot.subagent"
    child_id = episode.steps[0].children[0].header.episode_id
    assert child.attributes["gen_ai.conversation.id"] == child_id
    assert child.attributes["pocketpilot.parent_episode_id"] == episode.header.episode_id
    (note,) = [s for s in spans if s.name == "execute_tool create_note"]
    assert note.parent.span_id == child.context.span_id
    assert len({s.context.trace_id for s in spans}) == 1


async def test_lost_device_and_planner_errors_end_spans_with_error_status(spans_of):
    exporter, observer = spans_of
    planner = ScriptedPlanner(["not json at all", call("set_wifi", enabled=False)])  # then runs out
    episode = await Session(planner, SandboxExecutor(SandboxPhone(), EVERYDAY_APPS), observer=observer).run("wifi off")
    assert episode.stop_reason == "planner_error"
    spans = exporter.get_finished_spans()
    chats = sorted((s for s in spans if s.attributes["gen_ai.operation.name"] == "chat"), key=lambda s: s.start_time)
    assert [c.status.status_code for c in chats] == [StatusCode.ERROR, StatusCode.UNSET, StatusCode.ERROR]
    assert chats[0].attributes["error.type"] == "PlannerOutputError"
    assert chats[2].attributes["error.type"] == "PlannerBackendError"
    (agent,) = [s for s in spans if s.attributes["gen_ai.operation.name"] == "invoke_agent"]
    assert agent.status.status_code is StatusCode.ERROR and agent.attributes["error.type"] == "planner_error"
    assert all(s.end_time is not None for s in spans)


async def test_a_failing_observer_never_fails_the_run(caplog):
    class Broken:
        def observe(self, event: RunEvent) -> None:
            raise RuntimeError("dashboard down")

    planner = ScriptedPlanner([call("set_wifi", enabled=False), {"kind": "finish", "summary": "ok"}])
    episode = await Session(planner, SandboxExecutor(SandboxPhone(), EVERYDAY_APPS), observer=Broken()).run("wifi off")
    assert episode.stop_reason == "finish" and "dashboard down" in caplog.text


def test_missing_extra_and_bad_urls(monkeypatch):
    with pytest.raises(UsageError, match="OTLP URL"):
        otlp_exporter("localhost:4318")
    assert otlp_exporter("http://127.0.0.1:4318")._endpoint == "http://127.0.0.1:4318/v1/traces"
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # the API alone: spans, no exporters
    assert OtelObserver().agent_name == "pocketpilot"
    with pytest.raises(UsageError, match=r"pocketpilot\[otel\]"):
        console_exporter()
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)  # neither
    with pytest.raises(UsageError, match=r"pocketpilot\[otel\]"):
        OtelObserver()


def test_harness_does_not_import_opentelemetry():
    import subprocess

    code = ("import sys, pocketpilot, pocketpilot.harness, pocketpilot.cli.main; "
            "print(any(m.startswith('opentelemetry') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"




async def test_an_endpoint_planner_is_a_client_span_with_its_server(spans_of):
    from opentelemetry.trace import SpanKind

    from pocketpilot.contracts import PlannerInfo

    class Remote(ScriptedPlanner):
        @property
        def info(self) -> PlannerInfo:
            return PlannerInfo(backend="openai-compat:http://10.0.0.7:8080/v1", model="qwen-served")

    exporter, observer = spans_of
    await Session(Remote([{"kind": "finish", "summary": "ok"}]), SandboxExecutor(SandboxPhone(), EVERYDAY_APPS),
                  observer=observer).run("hello")
    (chat,) = [s for s in exporter.get_finished_spans() if s.attributes["gen_ai.operation.name"] == "chat"]
    assert chat.kind is SpanKind.CLIENT and chat.name == "chat qwen-served"
    assert chat.attributes["server.address"] == "10.0.0.7" and chat.attributes["server.port"] == 8080
    assert chat.attributes["gen_ai.provider.name"] == "openai_compat"


async def test_a_cancelled_run_ends_every_span(spans_of):
    import asyncio

    stuck_in = asyncio.Event()

    class Stuck(ScriptedPlanner):
        async def plan(self, request: PlanRequest) -> PlannerOutput:
            if self.remaining == 1:
                stuck_in.set()
                await asyncio.sleep(60)  # Ctrl-C lands here
            return await super().plan(request)

    exporter, observer = spans_of
    planner = Stuck([call("set_wifi", enabled=False), {"kind": "finish", "summary": "never"}])
    run = asyncio.create_task(Session(planner, SandboxExecutor(SandboxPhone(), EVERYDAY_APPS), observer=observer).run("wifi off"))
    await asyncio.wait_for(stuck_in.wait(), 10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    spans = exporter.get_finished_spans()
    assert sorted(s.attributes["gen_ai.operation.name"] for s in spans) == [
        "chat", "chat", "execute_tool", "invoke_agent"]
    stuck = max((s for s in spans if s.attributes["gen_ai.operation.name"] == "chat"), key=lambda s: s.start_time)
    assert stuck.status.status_code is StatusCode.ERROR and stuck.attributes["error.type"] == "cancelled"
    (agent,) = [s for s in spans if s.attributes["gen_ai.operation.name"] == "invoke_agent"]
    assert agent.attributes["pocketpilot.stop_reason"] == "cancelled"
