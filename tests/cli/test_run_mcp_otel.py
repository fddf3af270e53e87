"""`pocketpilot run --mcp/--mcp-url/--otel`: the CLI's own code path, with a scripted planner.

The planner is the only stand-in (``build_planner`` is replaced, so no model loads); the MCP
servers are real processes running ``examples/mcp_pinboard_server.py``, the spans go through
the real console and OTLP/HTTP exporters.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from scripted_actions import call

from pocketpilot.cli import run as run_module
from pocketpilot.cli.main import main
from pocketpilot.harness.base import PlannerOutput, PlanRequest
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tracing.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
PINBOARD = ROOT / "examples" / "mcp_pinboard_server.py"
SERVER_CMD = f"{shlex.quote(sys.executable)} {shlex.quote(str(PINBOARD))}"


def children_running(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` and whose parent is this process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and stat[0] not in ("Z", "X") and marker in cmd:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


class WatchingPlanner(ScriptedPlanner):
    """Scripted, and notes which pinboard servers were running while it planned and when it closed.

    The CLI closes the planner right after the run: a server still alive then was not stopped
    by the run (the event loop's shutdown would end it later, but not on every path).
    """

    seen: set[int]
    alive_at_close: list[int] | None = None

    async def plan(self, request: PlanRequest) -> PlannerOutput:
        self.seen |= set(children_running(PINBOARD.name))
        return await super().plan(request)

    async def aclose(self) -> None:
        self.alive_at_close = [pid for pid in self.seen if alive(pid)]


def use_planner(monkeypatch: pytest.MonkeyPatch, planner: ScriptedPlanner) -> None:
    monkeypatch.setattr(run_module, "build_planner", lambda *a, **k: planner)


def run_cli(*args: str) -> int:
    try:
        main(["run", *args])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def spans_in(text: str) -> list[dict]:
    """The JSON objects the console exporter printed (one per span, pretty-printed)."""
    decoder, spans, i = json.JSONDecoder(), [], 0
    while (start := text.find("{", i)) != -1:
        try:
            obj, i = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            i = start + 1
            continue
        if isinstance(obj, dict) and "context" in obj:
            spans.append(obj)
    return spans


@pytest.mark.slow
def test_mcp_tools_join_the_run_and_the_server_stops(monkeypatch, capsys, tmp_path):
    planner = WatchingPlanner([
        {"kind": "tool_call", "calls": [{"name": "pin_note", "arguments": {"text": "buy milk"}},
                                        {"name": "set_wifi", "arguments": {"enabled": False}}]},
        call("list_pins"),
        call("unpin_all"),  # destructive by its annotation: denied without --yes on a non-tty, and the run stops
    ])
    planner.seen = set()
    use_planner(monkeypatch, planner)
    code = run_cli("--mcp", SERVER_CMD, "--trace-dir", str(tmp_path), "--max-steps", "6",
                   "pin a note saying buy milk and turn wifi off")
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "mcp:" in out.out and "pin_note" in out.out
    (trace,) = tmp_path.glob("*.jsonl")
    episode, complete = read_trace(trace)
    assert complete and episode.stop_reason == "denied" and len(episode.steps) == 3
    assert "unpin_all" in episode.stop_detail and "stopped: denied" in out.out
    tools = {t.name: t for t in episode.header.tools}
    assert {"pin_note", "list_pins", "unpin_all", "set_wifi"} <= set(tools)
    assert tools["unpin_all"].destructive and not tools["list_pins"].destructive
    pinned, wifi = episode.steps[0].results
    assert pinned.ok and "pinned" in str(pinned.data) and wifi.ok
    assert episode.steps[1].results[0].data == {"result": ["buy milk"]}  # the same server process
    denied = episode.steps[2].results[0]
    assert denied.error is not None and denied.error.code == "confirmation_denied"
    assert len(planner.seen) == 1, "one pinboard server ran during the run"
    assert planner.alive_at_close == [], "the run ended without stopping its MCP server"
    (pid,) = planner.seen
    assert not alive(pid), "the MCP server outlived the run"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_stdio_and_http_servers_together(monkeypatch, capsys, tmp_path):
    """Both flags at once: the fixture server over HTTP (no annotations: MCP's defaults) and the
    pinboard over stdio (annotated)."""
    port = _free_port()
    fixture = ROOT / "tests" / "executor" / "mcp_fixture_server.py"
    with (tmp_path / "http.log").open("w") as log:
        http = subprocess.Popen([sys.executable, str(fixture), "http", str(port)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert http.poll() is None and time.monotonic() < deadline, (tmp_path / "http.log").read_text()
                time.sleep(0.05)
        planner = ScriptedPlanner([
            {"kind": "tool_call", "calls": [{"name": "forecast", "arguments": {"city": "Oslo"}},
                                            {"name": "list_pins", "arguments": {}}]},
            call("add", a=2, b=3),  # unannotated: destructive by MCP's default, so it needs a yes
        ])
        use_planner(monkeypatch, planner)
        code = run_cli("--mcp-url", f"http://127.0.0.1:{port}/mcp", "--mcp", SERVER_CMD, "--trace-dir", str(tmp_path),
                       "weather in Oslo and my pins")
    finally:
        http.kill()
        http.wait(timeout=10)
    assert code == 0, capsys.readouterr().err
    (trace,) = tmp_path.glob("*.jsonl")
    episode, _ = read_trace(trace)
    tools = {t.name: t for t in episode.header.tools}
    assert {"forecast", "add", "list_pins"} <= set(tools)
    assert tools["add"].destructive and tools["list_pins"].read_only
    weather, pins = episode.steps[0].results
    assert weather.data == {"city": "Oslo", "celsius": 21.5} and pins.data == {"result": []}
    denied = episode.steps[1].results[0]
    assert denied.error is not None and denied.error.code == "confirmation_denied"


@pytest.mark.slow
def test_a_server_that_cannot_start_is_one_line_and_exit_2(monkeypatch, capsys):
    use_planner(monkeypatch, ScriptedPlanner([]))
    failing = shlex.join([sys.executable, "-c", "import sys; sys.exit('no config file')"])
    code = run_cli("--mcp", failing, "hello")
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: MCP server") and "could not start" in err
    assert "server said: no config file" in err  # its own stderr, quoted
    assert run_cli("--mcp", "", "hello") == 2
    assert run_cli("--mcp-url", "localhost:9", "hello") == 2
    assert run_cli("--mcp", SERVER_CMD, "--task-id", "settings-wifi-off") == 2


@pytest.mark.slow
def test_server_is_stopped_when_the_run_errors(monkeypatch, capsys):
    class Exploding(WatchingPlanner):
        async def plan(self, request: PlanRequest) -> PlannerOutput:
            await super().plan(request)
            raise RuntimeError("planner bug")

    planner = Exploding([call("list_pins")])
    planner.seen = set()
    use_planner(monkeypatch, planner)
    with pytest.raises(RuntimeError, match="planner bug"):
        main(["run", "--mcp", SERVER_CMD, "hello"])
    assert planner.alive_at_close == []
    (pid,) = planner.seen
    assert not alive(pid)


DRIVER = """
import asyncio, sys
from pathlib import Path
sys.path[:0] = [{tests!r}, str(Path({tests!r}).parent)]
from scripted_actions import call
from test_run_mcp_otel import WatchingPlanner
from pocketpilot.cli import run as run_module
from pocketpilot.cli.main import main

class Slow(WatchingPlanner):
    async def plan(self, request):
        out = await super().plan(request)
        Path({pids!r}).write_text(" ".join(map(str, self.seen)))
        await asyncio.sleep(60)  # Ctrl-C lands here
        return out

planner = Slow([call("list_pins")])
planner.seen = set()
run_module.build_planner = lambda *a, **k: planner
main(["run", "--mcp", {cmd!r}, "--trace-dir", {traces!r}, "list my pins"])
"""


@pytest.mark.slow
def test_ctrl_c_stops_the_server(tmp_path):
    pids = tmp_path / "pids"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(tests=str(Path(__file__).parent), pids=str(pids), cmd=SERVER_CMD,
                                    traces=str(tmp_path / "traces")))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # see test_cli
                            text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (pids.exists() and pids.read_text().strip()):
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "the run never reached its planner"
            time.sleep(0.05)
        (server,) = map(int, pids.read_text().split())
        assert alive(server)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    deadline = time.monotonic() + 5
    while alive(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(server), "Ctrl-C left the MCP server running"
    (trace,) = (tmp_path / "traces").glob("*.jsonl")
    episode, complete = read_trace(trace)
    assert complete and episode.stop_reason == "cancelled"
    assert "list_pins" in {t.name for t in episode.header.tools}


# ---------------------------------------------------------------------- --otel

needs_otel = pytest.mark.skipif(importlib.util.find_spec("opentelemetry.sdk") is None,
                                reason="the otel extra is not installed")


def scripted_run() -> ScriptedPlanner:
    return ScriptedPlanner([
        call("set_wifi", enabled=False),
        call("read_note", note_id="missing"),
        {"kind": "finish", "summary": "wifi off"},
    ])


@needs_otel
def test_otel_console_prints_the_runs_spans(monkeypatch, capsys, tmp_path):
    use_planner(monkeypatch, scripted_run())
    code = run_cli("--otel", "console", "--trace-dir", str(tmp_path), "turn wifi off")
    out = capsys.readouterr()
    assert code == 0, out.err
    spans = spans_in(out.err)
    names = sorted(s["name"] for s in spans)
    assert names == ["chat scripted"] * 3 + ["execute_tool read_note", "execute_tool set_wifi",
                                             "invoke_agent pocketpilot"]
    agent = next(s for s in spans if s["name"].startswith("invoke_agent"))
    assert agent["parent_id"] is None
    assert all(s["parent_id"] == agent["context"]["span_id"] for s in spans if s is not agent)
    (episode_trace,) = tmp_path.glob("*.jsonl")
    episode, _ = read_trace(episode_trace)
    assert agent["attributes"]["gen_ai.conversation.id"] == episode.header.episode_id
    failed = next(s for s in spans if s["name"] == "execute_tool read_note")
    assert failed["status"]["status_code"] == "ERROR"
    assert "invoke_agent" not in out.out  # the run's own output stays clean


class Collector(BaseHTTPRequestHandler):
    received: list[bytes] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Collector.received.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@needs_otel
def test_otel_otlp_sends_spans_to_a_collector(monkeypatch, capsys, tmp_path):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    httpd = HTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    Collector.received = []
    try:
        use_planner(monkeypatch, scripted_run())
        code = run_cli("--otel", f"otlp=http://127.0.0.1:{httpd.server_port}", "--trace-dir", str(tmp_path),
                       "turn wifi off")
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
    assert code == 0, capsys.readouterr().err
    spans = []
    for body in Collector.received:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
            assert service == "pocketpilot"
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    ops = sorted(next(a.value.string_value for a in s.attributes if a.key == "gen_ai.operation.name")
                 for s in spans)
    assert ops == ["chat"] * 3 + ["execute_tool"] * 2 + ["invoke_agent"]
    chat = next(s for s in spans if s.name.startswith("chat"))
    assert {a.key for a in chat.attributes} >= {"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
                                                  "gen_ai.request.model", "gen_ai.provider.name"}


@needs_otel
@pytest.mark.parametrize(("value", "message"), [("jaeger", "--otel takes console"),
                                                ("otlp=localhost:4318", "not an http(s) OTLP URL")])
def test_bad_otel_values_are_one_line(monkeypatch, capsys, value, message):
    use_planner(monkeypatch, ScriptedPlanner([]))
    assert run_cli("--otel", value, "hello") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_otel_without_the_extra_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # what an install without it looks like
    use_planner(monkeypatch, ScriptedPlanner([]))
    assert run_cli("--otel", "console", "hello") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: OpenTelemetry export needs the optional extra: pip install 'pocketpilot[otel]'"]
