from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pocketpilot.memory import MemoryCandidate, Provenance, SqliteMemory

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "service-token-0123456789"  # as in conftest.py
ADMIN = "admin-credential-9876543210"


# The memory group alone imports in a third of the time of the whole CLI; one call below goes
# through `python -m pocketpilot memory` to check the group is registered there.
GROUP = ["-c", "from pocketpilot.cli.memory import memory; memory(prog_name='pocketpilot memory')"]


def cli(*args, admin=ADMIN, entry=GROUP):
    env = {**os.environ, "POCKETPILOT_SERVICE_TOKEN": SERVICE, "POCKETPILOT_ADMIN_TOKEN": admin,
           "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *entry, *args], capture_output=True,
                          text=True, env=env, timeout=120, cwd=ROOT)


def test_memory_cli_inspect_export_delete_in_a_subprocess(tmp_path, policy, svc, svc_bob):
    path = tmp_path / "cli.db"
    with SqliteMemory(path, policy) as store:
        mine = [store.write(svc, MemoryCandidate(content=c, provenance=Provenance(source="episode"))).id
                for c in ("paid the electricity bill", "renewed the passport", "booked the dentist")]
        store.write(svc_bob, MemoryCandidate(content="bob's secret note", provenance=Provenance(source="episode")))
    res = cli("inspect", str(path), "--user", "alice", "--keyword-only", entry=["-m", "pocketpilot", "memory"])
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout[: res.stdout.rindex("}") + 1])["items"] == 3
    assert "bob's secret" not in res.stdout
    out = tmp_path / "alice.jsonl"
    res = cli("export", str(path), "--user", "alice", "--keyword-only", "-o", str(out))
    assert res.returncode == 0, res.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["id"] for r in records} == set(mine) and {r["owner"] for r in records} == {"alice"}
    res = cli("delete", str(path), mine[0], "--user", "alice", "--yes", "--keyword-only")
    assert res.returncode == 0 and "deleted 1" in res.stdout, res.stderr
    res = cli("export", str(path), "--user", "alice", "--keyword-only")
    assert res.returncode == 0 and mine[0] not in res.stdout and mine[1] in res.stdout
    res = cli("delete", str(path), "no-such-id", "--user", "alice", "--yes", "--keyword-only")
    assert res.returncode != 0 and "Traceback" not in res.stderr
    res = cli("inspect", str(path), "--keyword-only", admin="x" * 30)  # forged admin credential
    assert res.returncode != 0 and "Traceback" not in res.stderr
    res = cli("export", str(path), "--keyword-only")  # no --user
    assert res.returncode == 2
