from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import apsw
from click.testing import CliRunner

from pocketpilot.cli.memory import memory
from pocketpilot.memory import MemoryCandidate, Provenance, SqliteMemory

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "service-token-0123456789"  # as in conftest.py
ADMIN = "admin-credential-9876543210"

WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from pocketpilot.memory import AccessPolicy, Caller, MemoryCandidate, Provenance, SqliteMemory
    store = SqliteMemory(sys.argv[1], AccessPolicy({svc!r}, {adm!r}))
    caller = Caller.service({svc!r}, acting_for=sys.argv[2])
    for i in range(int(sys.argv[3])):
        r = store.write(caller, MemoryCandidate(content=f"{{sys.argv[2]}} note {{i}}",
                                                provenance=Provenance(source="episode")))
        print(r.id, flush=True)
    """
).format(root=str(ROOT), svc=SERVICE, adm=ADMIN)


def _writer(path: Path, who: str, n: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), who, str(n)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_kill_9_loses_no_acknowledged_write(tmp_path, policy, svc):
    path = tmp_path / "crash.db"
    SqliteMemory(path, policy).close()
    proc = _writer(path, "alice", 10_000)
    acked = []
    assert proc.stdout is not None
    while len(acked) < 150:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        acked.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with SqliteMemory(path, policy) as store:
        assert store.integrity_check() == "ok"
        present = {i.id for i in store.list_items(svc, limit=100_000)}
    assert set(acked) <= present


def test_two_processes_write_concurrently(tmp_path, policy, svc, svc_bob):
    path = tmp_path / "two.db"
    SqliteMemory(path, policy).close()
    procs = [_writer(path, who, 120) for who in ("alice", "bob")]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "locked" not in err
    with SqliteMemory(path, policy) as store:
        assert len(store.list_items(svc, limit=1000)) == 120
        assert len(store.list_items(svc_bob, limit=1000)) == 120


def test_cli_inspect_export_delete_consolidate(tmp_path, policy, svc):
    path = tmp_path / "cli.db"
    with SqliteMemory(path, policy) as store:
        ids = [store.write(svc, MemoryCandidate(content=c, provenance=Provenance(source="episode"))).id
               for c in ("charged the phone overnight", "charged the phone overnight again", "went running")]
    env = {"POCKETPILOT_SERVICE_TOKEN": SERVICE, "POCKETPILOT_ADMIN_TOKEN": ADMIN}
    run = CliRunner().invoke
    res = run(memory, ["inspect", str(path), "--keyword-only"], env=env)
    assert res.exit_code == 0, res.output
    stats, end = json.JSONDecoder().raw_decode(res.output)  # the counts, then one line per item
    assert stats["items"] == 3 and stats["by_tier"] == {"episodic": {"active": 3}}
    listed = [line.split()[0] for line in res.output[end:].strip().splitlines()]
    assert sorted(listed) == sorted(ids)
    res = run(memory, ["export", str(path), "--user", "alice", "--keyword-only"], env=env)
    assert res.exit_code == 0 and len(res.output.strip().splitlines()) == 3
    assert {json.loads(line)["id"] for line in res.output.strip().splitlines()} == set(ids)
    res = run(memory, ["consolidate", str(path), "--user", "alice", "--keyword-only"], env=env)
    assert res.exit_code == 0 and json.loads(res.output)["clusters"] == 1
    res = run(memory, ["delete", str(path), ids[2], "--yes", "--keyword-only"], env=env)
    assert res.exit_code == 0 and "deleted 1" in res.output
    res = run(memory, ["delete", str(path), "--all", "--user", "alice", "--yes", "--keyword-only"], env=env)
    assert res.exit_code == 0 and "deleted 3" in res.output  # 2 episodic + the consolidated fact
    bad = run(memory, ["inspect", str(path), "--keyword-only"],
              env={"POCKETPILOT_SERVICE_TOKEN": SERVICE, "POCKETPILOT_ADMIN_TOKEN": "x" * 20})
    assert bad.exit_code != 0
    conn = apsw.Connection(str(path))
    try:
        assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 0
    finally:
        conn.close()
