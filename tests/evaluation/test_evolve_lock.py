"""One evolve run per output folder: a second process is refused, a killed holder's lock is taken over."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketpilot.cli.main import cli
from pocketpilot.errors import FolderLockedError, UsageError
from pocketpilot.evaluation.evolve import EvolveLoop, NoDistiller
from pocketpilot.evaluation.evolve_state import EvolveSettings
from pocketpilot.evaluation.folder_lock import LOCK_NAME, FolderLock

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import evolve_helpers as h  # noqa: E402

HOLD = ("import sys\n"
        "from pocketpilot.evaluation.folder_lock import FolderLock\n"
        "FolderLock(sys.argv[1]).acquire()\n"
        "print('held', flush=True)\n"
        "sys.stdin.readline()\n")


class Holder:
    """Another process holding a folder's lock until it is killed."""

    def __init__(self, folder: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "held\n"
        self.pid = self.proc.pid

    def kill(self) -> None:
        """SIGKILL: no chance to release anything."""
        self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture
def holder_of(tmp_path: Path) -> Iterator[list[Holder]]:
    made: list[Holder] = []
    yield made
    for holder in made:
        if holder.proc.poll() is None:
            holder.kill()


def test_a_second_process_is_refused_and_a_killed_holders_lock_is_taken_over(
        tmp_path: Path, holder_of: list[Holder], caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "out"
    holder = Holder(folder)
    holder_of.append(holder)
    with pytest.raises(FolderLockedError) as refused:
        FolderLock(folder).acquire()
    assert refused.value.pid == holder.pid and isinstance(refused.value, UsageError)
    assert str(holder.pid) in str(refused.value) and "\n" not in str(refused.value)
    holder.kill()  # the kernel drops its flock; its pid stays in the file
    taken: list[int] = []
    lock = FolderLock(folder, on_takeover=taken.append)
    with caplog.at_level(logging.WARNING, logger="pocketpilot.evaluation.folder_lock"):
        assert lock.acquire() == holder.pid
    assert taken == [holder.pid] and "taking over" in caplog.text and str(holder.pid) in caplog.text
    with pytest.raises(FolderLockedError):  # now this process holds it: another object is refused too
        FolderLock(folder).acquire()
    lock.acquire()  # re-entrant for its holder
    lock.release()
    assert lock.held
    lock.release()
    assert not lock.held and (folder / LOCK_NAME).read_text() == ""  # a clean release leaves nothing to take over
    again: list[int] = []
    with FolderLock(folder, on_takeover=again.append) as fresh:
        assert fresh.held
    assert again == []


def test_evolve_on_a_folder_in_use_is_one_line_exit_2_and_loses_nothing(
        team_tasks: Path, tmp_path: Path, holder_of: list[Holder]) -> None:
    out = tmp_path / "out"
    asyncio.run(h.make_loop(out, team_tasks, h.OraclePlanners()).run(1))
    approved = sorted((out / "eta.json.revisions" / "approved").iterdir())
    assert approved  # iteration 1 accepted something
    keep = {p: p.read_bytes() for p in [out / "eta.json", *approved, out / "report.md"]}
    holder = Holder(out)
    holder_of.append(holder)
    args = ["evolve", "--tasks", str(team_tasks), "--out", str(out), "--iterations", "2", "--seed", "1",
            "--dev-sample", "6", "--evolve-sample", "6", "--no-embedder", "--auto-approve"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and f"pid {holder.pid}" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1
    with pytest.raises(FolderLockedError):
        asyncio.run(h.make_loop(out, team_tasks, h.OraclePlanners()).run(2))
    assert {p: p.read_bytes() for p in keep} == keep and not (out / "iter-02").exists()
    holder.kill()
    lines: list[str] = []
    settings = EvolveSettings(tasks_dir=str(team_tasks), dev_sample=6, evolve_sample=6, seed=1)
    loop = EvolveLoop(out, settings, h.OraclePlanners(), base_eta=h.base_eta(), proposer=h.HelpNoteProposer(),
                      distiller=NoDistiller(), auto_approve=True, on_event=lines.append)
    assert asyncio.run(loop.run(2)).iterations_done == 2
    assert any("taking over" in line and str(holder.pid) in line for line in lines)
    assert all(p.read_bytes() == keep[p] for p in approved)  # what was accepted stays
