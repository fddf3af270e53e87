"""`pocketpilot run --endpoint` as a user runs it (a subprocess) against the protocol fake."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from _openai_fake import FakeOpenAI

from pocketpilot.models.store import DEFAULT_MODEL

TASK = "conditional-low-battery"
GET = '{"kind":"tool_call","calls":[{"name":"get_settings","arguments":{}}]}'
FINISH = '{"kind":"finish","summary":"done"}'


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run([sys.executable, "-m", "pocketpilot", "run", *args], capture_output=True, text=True,
                          timeout=120, env={**base, **(env or {})})


def trace_of(trace_dir: Path) -> list[dict]:
    (path,) = trace_dir.glob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_finished_run_exits_0_records_the_served_model_and_keeps_the_key_out(tmp_path):
    key = "sk-env-" + "a1" * 10
    with FakeOpenAI([GET, FINISH], models=("served-small",), api_key=key).running() as fake:
        out = run_cli("--endpoint", fake.url, "--task-id", TASK, "--trace-dir", str(tmp_path),
                      env={"OPENAI_API_KEY": key})
    assert out.returncode == 0, out.stderr
    assert fake.problems == [] and len(fake.requests) == 2
    records = trace_of(tmp_path)
    planner = records[0]["header"]["planner"]
    assert planner["model"] == "served-small" != DEFAULT_MODEL
    assert planner["output_mode"] == "json_object_schema"
    assert records[-1]["stop_reason"] == "finish"
    assert key not in (tmp_path / next(tmp_path.glob("*.jsonl")).name).read_text()
    assert key not in out.stdout + out.stderr


def test_planner_error_exits_1_with_one_line(tmp_path):
    with FakeOpenAI([GET, FINISH], api_key="sk-flag", fail_at=2).running() as fake:
        out = run_cli("--endpoint", fake.url, "--api-key", "sk-flag", "--task-id", TASK,
                      "--trace-dir", str(tmp_path))
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: planner_error:") and "HTTP 500" in last
    assert trace_of(tmp_path)[-1]["stop_reason"] == "planner_error"


def test_unreachable_endpoint_is_one_line_not_a_traceback(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = run_cli("--endpoint", f"http://127.0.0.1:{port}/v1", "--task-id", TASK, "--trace-dir", str(tmp_path))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "cannot connect" in out.stderr
