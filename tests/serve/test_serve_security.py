"""The service's edges: the token file, the bind address, the trace folder, one owner's memories."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from _serve_support import Served, kind, sse
from click.testing import CliRunner

from pocketpilot.cli.main import cli
from pocketpilot.errors import UsageError
from pocketpilot.serve import check_bind, load_or_create_token
from pocketpilot.serve.auth import trace_file

READ = [{"kind": "tool_call", "calls": [{"name": "get_device_info", "arguments": {}}]},
        {"kind": "finish", "summary": "read it"}]


def test_token_is_generated_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "config" / "serve-token"
    token, where = load_or_create_token(path)
    assert where == path and len(token) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_token(path)[0] == token  # kept, not regenerated
    path.chmod(0o644)
    assert load_or_create_token(path)[0] == token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # tightened
    path.write_text("")
    with pytest.raises(UsageError, match="empty"):
        load_or_create_token(path)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.5", "[::1]"])
def test_loopback_binds_need_nothing(host: str) -> None:
    check_bind(host, tls=False, insecure_lan=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "phone-host.lan"])
def test_other_binds_need_tls_or_insecure_lan(host: str) -> None:
    with pytest.raises(UsageError, match="--insecure-lan"):
        check_bind(host, tls=False, insecure_lan=False)
    check_bind(host, tls=True, insecure_lan=False)
    check_bind(host, tls=False, insecure_lan=True)


def test_serve_refuses_a_lan_host_before_starting_anything(tmp_path: Path) -> None:
    token = tmp_path / "token"
    result = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0", "--token-file", str(token), "--no-pull"])
    assert result.exit_code == 2
    assert "--insecure-lan" in result.output and "Traceback" not in result.output
    assert not token.exists()  # refused before the token, the model or a socket


def test_serve_refuses_a_bad_eta_file_before_starting_anything(tmp_path: Path) -> None:
    token, eta = tmp_path / "token", tmp_path / "eta.json"
    eta.write_text("{not an eta")
    result = CliRunner().invoke(cli, ["serve", "--eta", str(eta), "--token-file", str(token), "--no-pull"])
    assert result.exit_code == 2 and "eta.json" in result.output and "Traceback" not in result.output
    assert not token.exists()


def test_trace_names_never_leave_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "traces" / "s1"
    folder.mkdir(parents=True)
    (folder / "abc123.jsonl").write_text("{}\n")
    (tmp_path / "secret.jsonl").write_text("secret\n")
    (folder / "link.jsonl").symlink_to(tmp_path / "secret.jsonl")
    assert trace_file(folder, "abc123") == (folder / "abc123.jsonl").resolve()
    for name in ("../secret", "../../etc/passwd", "/etc/passwd", "..", "link", "abc123/../../secret", "%2e%2e",
                 "a\x00b", "nope"):
        with pytest.raises(LookupError):
            trace_file(folder, name)


async def test_trace_endpoint_serves_the_sessions_traces_only(served: Served) -> None:
    sid, key = await served.open(READ)
    other_sid, other_key = await served.open(READ)
    await served.send(sid, key, "what phone is this?")
    await sse(served.client, f"/v1/sessions/{sid}/events", served.auth(key), until=kind("end"))
    (episode,) = (await served.client.get(f"/v1/sessions/{sid}", headers=served.auth(key))).json()["traces"]
    r = await served.client.get(f"/v1/sessions/{sid}/traces/{episode}", headers=served.auth(key))
    assert r.status_code == 200
    assert r.text == (served.trace_dir / sid / f"{episode}.jsonl").read_text()
    html = await served.client.get(f"/v1/sessions/{sid}/traces/{episode}?format=html", headers=served.auth(key))
    assert html.status_code == 200 and "<html" in html.text.lower()
    chat = await served.client.get(f"/v1/sessions/{sid}/traces/{episode}?format=chat", headers=served.auth(key))
    assert {"role": "user", "content": "what phone is this?"} in chat.json()["messages"]
    bad = await served.client.get(f"/v1/sessions/{sid}/traces/{episode}?format=pdf", headers=served.auth(key))
    assert bad.status_code == 422
    (served.trace_dir / "outside.jsonl").write_text("not yours\n")
    for name in ("..%2Foutside", "%2E%2E%2Foutside", "..%2F..%2F..%2Fetc%2Fpasswd", "outside", "%00", "x%2F..%2F..%2Foutside"):
        for form in ("jsonl", "html", "chat"):
            r = await served.client.get(f"/v1/sessions/{sid}/traces/{name}?format={form}", headers=served.auth(key))
            assert r.status_code == 404 and "not yours" not in r.text, (name, form)
    # another session's holder cannot read it through its own session
    r = await served.client.get(f"/v1/sessions/{other_sid}/traces/{episode}", headers=served.auth(other_key))
    assert r.status_code == 404
    r = await served.client.get(f"/v1/sessions/{sid}/traces/{episode}", headers=served.auth(other_key))
    assert r.status_code == 403


async def test_memory_is_searched_as_the_sessions_owner(make_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from pocketpilot.memory import AccessPolicy, Caller, MemoryCandidate, Provenance, SqliteMemory
    from pocketpilot.serve import MemoryBinding

    store = SqliteMemory(tmp_path / "memory.db", AccessPolicy("svc-token-0123456789", "admin-token-0123456789"))
    try:
        store.write(Caller.service("svc-token-0123456789", acting_for="alice"),
                    MemoryCandidate(content="Alice parks on level 3 of the garage", tier="long_term",
                                    provenance=Provenance(source="user_statement")))
        search = [{"kind": "memory_search", "query": "garage level parks"}, {"kind": "finish", "summary": "ok"}]
        async with make_server(memory=MemoryBinding(store, "svc-token-0123456789")) as s:
            found = {}
            for owner in ("alice", "bob"):
                sid, key = await s.open(search, owner=owner)
                await s.send(sid, key, "where did I park?")
                got = await sse(s.client, f"/v1/sessions/{sid}/events", s.auth(key), until=kind("end"))
                step = next(e.data["step"] for e in got if e.event == "step")
                found[owner] = [m["content"] for m in step["retrieved"]]
                assert all(m["provenance"] for m in step["retrieved"])
        assert found["alice"] == ["Alice parks on level 3 of the garage"]
        assert found["bob"] == []
    finally:
        store.close()


def test_no_token_file_is_world_readable_by_default_umask(tmp_path: Path) -> None:
    old = os.umask(0)  # even with a permissive umask the file is 0600
    try:
        load_or_create_token(tmp_path / "t")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "t").stat().st_mode) == 0o600


def test_a_client_cannot_make_the_service_load_a_file(tmp_path: Path) -> None:
    from pocketpilot.cli.serve import _Planners

    planners = _Planners("qwen2.5-coder-0.5b", None, 0.0, 64, None)  # type: ignore[arg-type]
    for name in ("/etc/passwd.gguf", "../models/x.gguf", str(tmp_path / "model.gguf"), "sub/dir"):
        with pytest.raises(UsageError, match="catalogue model"):
            planners(name)
