"""`pocketpilot serve` as a user starts it: a process on a free loopback port, stopped with Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from _serve_support import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_serve_runs_a_session_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]},
                                  {"kind": "finish", "summary": "read it"}]))
    port, token_file = free_port(), tmp_path / "config" / "serve-token"
    proc = subprocess.Popen([sys.executable, "-m", "pocketpilot", "serve", "--port", str(port), "--token-file",
                             str(token_file), "--trace-dir", str(tmp_path / "traces"), "--script", str(script)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{url}/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
                time.sleep(0.2)
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        auth = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
        with httpx.Client(base_url=url, headers=auth, timeout=10) as client:
            created = client.post("/v1/sessions", json={"owner": "anna"}).json()
            key = {"X-Session-Key": created["key"]}
            assert client.post(f"/v1/sessions/{created['id']}/requests", json={"request": "what phone?"},
                               headers=key).status_code == 202
            events = []
            with client.stream("GET", f"/v1/sessions/{created['id']}/events", headers=key) as stream:
                for line in stream.iter_lines():
                    if line.startswith("event: "):
                        events.append(line[7:])
                        if events[-1] == "end":
                            break
        assert events.count("step") == 2 and events[-1] == "end"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
    assert proc.returncode in (0, 130, -signal.SIGINT)
