"""`pocketpilot serve` as a user starts it: a process on a free loopback port, stopped with Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import ssl
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


def _self_signed(folder: Path) -> tuple[Path, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


@pytest.mark.slow
def test_serve_speaks_tls_when_given_a_certificate(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"kind": "finish", "summary": "ok"}]))
    port, trusted = free_port(), ssl.create_default_context(cafile=str(cert))
    proc = subprocess.Popen([sys.executable, "-m", "pocketpilot", "serve", "--port", str(port), "--ssl-certfile",
                             str(cert), "--ssl-keyfile", str(key), "--token-file", str(tmp_path / "token"),
                             "--trace-dir", str(tmp_path / "traces"), "--script", str(script)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(f"https://127.0.0.1:{port}/openapi.json", verify=trusted, timeout=1)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        assert r.status_code == 200 and r.json()["openapi"].startswith("3.1")
        with pytest.raises(httpx.TransportError):  # no plain HTTP beside it
            httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=2)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)


def test_serve_flags_reach_the_planner_and_the_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--contexts reaches the in-process planner; --idle-timeout and --events-in-memory the service
    (no model loads, no socket opens: the planner and uvicorn are recorders)."""
    import uvicorn
    from click.testing import CliRunner

    import pocketpilot.harness.planners as planners_module
    from pocketpilot.cli.main import cli

    made: list[dict] = []
    served: list = []

    class Recorder:
        def __init__(self, path: Path, **kwargs: object) -> None:
            made.append(kwargs)

    monkeypatch.setattr(planners_module, "LlamaCppPlanner", Recorder)
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 60)
    base = ["serve", "--token-file", str(tmp_path / "token"), "--trace-dir", str(tmp_path / "t"), "--model", str(model),
            "--no-pull"]
    result = CliRunner().invoke(cli, [*base, "--contexts", "6", "--idle-timeout", "90", "--events-in-memory", "50"])
    assert result.exit_code == 0, result.output
    assert made[-1]["contexts"] == 6
    config = served[-1].state.registry.config
    assert config.idle_timeout_s == 90 and config.events_in_memory == 50
    result = CliRunner().invoke(cli, [*base, "--idle-timeout", "0"])
    assert result.exit_code == 0, result.output
    assert made[-1]["contexts"] == 4 and served[-1].state.registry.config.idle_timeout_s is None
    assert CliRunner().invoke(cli, [*base, "--contexts", "0"]).exit_code == 2
