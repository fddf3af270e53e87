"""Helpers of the evolve tests: a tool module written outside the project, planners, a proposer.

Also imported by the subprocess the resume test kills, so nothing here may depend on pytest.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import yaml

from pocketpilot.adapters import AddNote, Eta, Revision, RoutingNote, compile_eta
from pocketpilot.contracts import Episode, Finish
from pocketpilot.evaluation.evolve import EvolveLoop, NoDistiller
from pocketpilot.evaluation.evolve_state import Candidate, EvolveSettings
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import TaskSpec, oracle_actions

TEAM_MODULE = Path(__file__).resolve().parents[2] / "bench" / "kennel_app.py"
"""The team's tool module: the one bench/bench_evolve.py measures, a file outside the package."""

HELP_NOTE = "evolve-test.help"


def write_tool_module(folder: Path) -> Path:
    """The team's tool module, as a file of its own in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / TEAM_MODULE.name
    shutil.copyfile(TEAM_MODULE, path)
    return path


def split_ids(tasks_dir: Path, split: str) -> list[str]:
    """The ids of a split's tasks, as the folder's MANIFEST.yml lists them."""
    return list(yaml.safe_load((tasks_dir / "MANIFEST.yml").read_text())["splits"][split])


def split_files(tasks_dir: Path, split: str) -> set[str]:
    """The resolved paths of a split's task files: what an audit of opened files compares with."""
    return {str((tasks_dir / f"{t}.yaml").resolve()) for t in split_ids(tasks_dir, split)}


@contextlib.contextmanager
def files_opened() -> Iterator[set[str]]:
    """Record the resolved path of every file this process opens inside the block.

    An audit hook sees every open, whatever the code under test opens a file with (io.open,
    os.open, Path.read_text ...), so a test can prove the evolve loop never read the test split.
    A hook cannot be removed once added: it stops recording when the block ends and does nothing
    from then on. The set is filled when the block ends.

    Yields:
        The set the opened paths land in.
    """
    opened: list[str] = []
    listening = [True]

    def hook(event: str, args: tuple) -> None:
        if listening[0] and event == "open" and isinstance(args[0], (str, Path)):
            opened.append(str(args[0]))

    seen: set[str] = set()
    sys.addaudithook(hook)
    try:
        yield seen
    finally:
        listening[0] = False
        seen.update(str(Path(p).resolve()) for p in opened)


def _odd(task_id: str) -> bool:
    return hashlib.sha256(task_id.encode()).digest()[0] % 2 == 1


class OraclePlanners:
    """Planner per (task, η): the task's oracle when it "knows how", an immediate finish otherwise.

    A task knows how when its id hashes even, or when η holds the help note (the candidate the
    fake proposer makes). ``harmful`` makes the help note break every even task instead.
    """

    def __init__(self, *, harmful: bool = False, kill_at: int | None = None) -> None:
        self.calls: list[str] = []
        self.harmful = harmful
        self.kill_at = kill_at

    def __call__(self, task: TaskSpec, eta: Eta) -> ScriptedPlanner:
        self.calls.append(task.id)
        if self.kill_at is not None and len(self.calls) == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)  # a run killed between episodes, as a power cut would
        helped = eta.note(HELP_NOTE) is not None
        knows = (not _odd(task.id) and not helped) if self.harmful else (not _odd(task.id) or helped)
        if knows:
            return ScriptedPlanner(oracle_actions(task))
        return ScriptedPlanner([Finish(summary="Done.")])


class HelpNoteProposer:
    """Proposes the help note whenever a dev episode failed and η lacks it."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def propose(self, failures: Sequence[Episode], eta: Eta, experience: Sequence[object]) -> tuple[list[Candidate], list[str]]:
        self.seen.append(len(failures))
        if not failures or eta.note(HELP_NOTE) is not None:
            return [], ["nothing to propose"]
        rev = Revision(id=f"help-{eta.version[:8]}", base_version=eta.version, rationale="help note",
                       ops=[AddNote(note=RoutingNote(id=HELP_NOTE, text="Work through the request step by step."))])
        evidence = [{"episode_id": e.header.episode_id, "task_id": e.header.task_id} for e in failures]
        return [Candidate(kind="revision", revision=rev, summary="help note", evidence=evidence)], []


def base_eta() -> Eta:
    """An η with no tools of the sandbox: the loop needs only its notes and policies here."""
    return compile_eta([], None, notes=[])


def make_loop(out: Path, tasks_dir: Path, planners: OraclePlanners, *, auto_approve: bool = True,
              dev: int = 6, evolve: int = 6) -> EvolveLoop:
    settings = EvolveSettings(tasks_dir=str(tasks_dir), dev_sample=dev, evolve_sample=evolve, seed=1)
    return EvolveLoop(out, settings, planners, base_eta=base_eta(), proposer=HelpNoteProposer(),
                      distiller=NoDistiller(), auto_approve=auto_approve)


if __name__ == "__main__":  # the killed subprocess of the resume test: OUT TASKS KILL_AT
    out, tasks_dir, kill_at = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    asyncio.run(make_loop(out, tasks_dir, OraclePlanners(kill_at=kill_at)).run(1))
