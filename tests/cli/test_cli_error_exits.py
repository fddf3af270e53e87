"""Every typed error from any command: exit 2, one line on stderr, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from pocketpilot.cli._errors import ErrorMappingGroup
from pocketpilot.cli.main import main
from pocketpilot.cli.memory import memory
from pocketpilot.errors import MemorySchemaError

SERVICE = "service-token-0123456789"
ADMIN = "admin-credential-9876543210"


@pytest.fixture
def not_a_store(tmp_path: Path) -> Path:
    path = tmp_path / "notes.db"
    path.write_text("shopping list: milk, eggs\n")
    return path


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(args)
    return int(exc.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["memory", "inspect", "{not_a_store}", "--keyword-only"], "not a valid SQLite database"),
        (["memory", "inspect", "{not_a_store}", "--keyword-only", "--admin-token", "short"], "at least 16 characters"),
        (["checkpoint", "import", "{not_a_store}", "--registry", "{tmp}/reg"], "bad magic"),
        (["checkpoint", "promote", "v9", "--registry", "{tmp}/reg"], "no version 'v9'"),
        (["checkpoint", "rollback", "--registry", "{tmp}/reg"], "nothing is serving"),
        (["trace", "show", "{not_a_store}"], "not a pocketpilot trace"),
    ],
)
def test_typed_errors_exit_2_with_one_line(args: list[str], message: str, not_a_store: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POCKETPILOT_SERVICE_TOKEN", SERVICE)
    monkeypatch.setenv("POCKETPILOT_ADMIN_TOKEN", ADMIN)
    code, err = run_main([a.format(not_a_store=not_a_store, tmp=tmp_path) for a in args], capsys)
    assert code == 2, err
    assert err.startswith("error: ") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_group_run_on_its_own_maps_them_too(not_a_store: Path) -> None:
    env = {"POCKETPILOT_SERVICE_TOKEN": SERVICE, "POCKETPILOT_ADMIN_TOKEN": ADMIN}
    res = CliRunner().invoke(memory, ["inspect", str(not_a_store), "--keyword-only"], env=env)
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit)
    assert res.output.startswith("error: ") and "Error:" not in res.output


def test_a_multi_line_message_prints_as_one_line() -> None:
    group = ErrorMappingGroup("g")

    @group.command("boom")
    def boom() -> None:
        raise MemorySchemaError("schema 7 is newer than this build\n  upgrade pocketpilot\n\tor restore a backup")

    root = ErrorMappingGroup("root")
    root.add_command(group)
    res = CliRunner().invoke(root, ["g", "boom"])
    assert res.exit_code == 2
    assert res.output == "error: schema 7 is newer than this build upgrade pocketpilot or restore a backup\n"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="ExceptionGroup is a builtin from 3.11")
def test_typed_errors_wrapped_by_a_task_group_are_mapped_and_others_are_not() -> None:
    root = ErrorMappingGroup("root")

    @root.command("typed")
    def typed() -> None:
        raise ExceptionGroup("rollouts", [MemorySchemaError("store a is corrupt"), MemorySchemaError("store b too")])

    @root.command("mixed")
    def mixed() -> None:
        raise ExceptionGroup("rollouts", [MemorySchemaError("store a is corrupt"), ZeroDivisionError("bug")])

    res = CliRunner().invoke(root, ["typed"])
    assert res.exit_code == 2 and res.output == "error: store a is corrupt\n"
    res = CliRunner().invoke(root, ["mixed"])
    assert res.exit_code == 1 and isinstance(res.exception, ExceptionGroup)  # a bug still shows as one


def test_click_usage_errors_keep_their_own_handling() -> None:
    @click.command()
    @click.option("--n", type=int)
    def cmd(n: int) -> None: ...

    root = ErrorMappingGroup("root")
    root.add_command(cmd, "cmd")
    assert CliRunner().invoke(root, ["cmd", "--n", "x"]).exit_code == 2


@pytest.mark.slow
def test_memory_inspect_on_a_non_store_as_a_user_runs_it(not_a_store: Path) -> None:
    env = {**os.environ, "POCKETPILOT_SERVICE_TOKEN": SERVICE, "POCKETPILOT_ADMIN_TOKEN": ADMIN,
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-m", "pocketpilot", "memory", "inspect", str(not_a_store), "--keyword-only"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error: ") and len(out.stderr.strip().splitlines()) == 1
