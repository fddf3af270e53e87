"""``experience_pool``: a later iteration distils the verified successes of every earlier one.

Without it, an experience candidate that is not accepted is lost: the next iteration distils
only its own dev sample and the previous evolve baseline, so the library never outgrows one
iteration's successes. Scripted planners on the kennel world (tasks made by ``tasks generate``
from a module outside the project): experience changes no outcome here, so nothing is
accepted and every iteration's candidate is measured and dropped, as on the generated suite.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner

from pocketpilot.adapters import Eta, load_eta
from pocketpilot.adapters.experience import ExperienceEntry
from pocketpilot.cli.main import cli
from pocketpilot.contracts import Episode, Finish
from pocketpilot.evaluation.evolve import EvolveLoop, ExperienceDistiller
from pocketpilot.evaluation.evolve_state import Decision, EvolveSettings, Proposals
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import TaskSpec, oracle_actions
from pocketpilot.tracing.trace import read_trace
from pocketpilot.trainer_bridge.distil import distil

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import evolve_helpers as h  # noqa: E402
from test_evolve_learning import MISLEADING, ExperienceProposer, MisledPlanners  # noqa: E402


def _even(task_id: str) -> bool:
    return hashlib.sha256(task_id.encode()).digest()[0] % 2 == 0


class HalfPass:
    """The oracle on tasks whose id hashes even, an immediate finish on the rest, whatever η holds."""

    def __call__(self, task: TaskSpec, eta: Eta) -> ScriptedPlanner:
        return ScriptedPlanner(oracle_actions(task) if _even(task.id) else [Finish(summary="Done.")])


def _learnable(out: Path, folder: str) -> set[str]:
    """The episodes of a run set's verified successes that distil into an entry (one without a call gives none)."""
    lines = (out / folder / "outcomes.jsonl").read_text().splitlines()
    episodes = [read_trace(out / o["trace"])[0] for o in map(json.loads, lines) if o["success"]]
    return {p for e in distil(episodes) for p in e.provenance}


def _run(out: Path, tasks: Path, pool: bool, iterations: int) -> ExperienceProposer:
    proposer = ExperienceProposer()
    settings = EvolveSettings(tasks_dir=str(tasks), dev_sample=4, evolve_sample=6, seed=7, experience_pool=pool)
    loop = EvolveLoop(out, settings, HalfPass(), base_eta=h.base_eta(), proposer=proposer,
                      distiller=ExperienceDistiller(), auto_approve=True)
    assert asyncio.run(loop.run(iterations)).iterations_done == iterations
    return proposer


def test_the_pool_keeps_earlier_dev_successes_that_were_not_accepted(team_tasks: Path, tmp_path: Path) -> None:
    pooled = _run(tmp_path / "pool", team_tasks, True, 3)
    plain = _run(tmp_path / "plain", team_tasks, False, 3)
    for out in (tmp_path / "pool", tmp_path / "plain"):
        for i in (1, 2, 3):  # experience never helps here: nothing is accepted, the library stays empty
            assert Decision.model_validate_json((out / f"iter-0{i}" / "decision.json").read_text()).accepted == []
        assert load_eta(out / "eta.json").experience == []
    out = tmp_path / "pool"
    dev1, dev2 = _learnable(out, "iter-01/dev"), _learnable(out, "iter-02/dev")
    evolve1 = _learnable(out, "iter-01/evolve/base")
    assert dev1 and dev2 and evolve1  # the samples hold successes to learn from
    given = {i: {p for e in entries for p in e.provenance} for i, entries in enumerate(pooled.given, 1)}
    plain_given = {i: {p for e in entries for p in e.provenance} for i, entries in enumerate(plain.given, 1)}
    # iteration 2: without the pool, iteration 1's dev successes are gone; with it, they are distilled again
    assert dev1 <= given[2] and not dev1 & plain_given[2]
    assert evolve1 <= given[2]  # the previous evolve baseline is read either way
    # iteration 3: every earlier dev sample and evolve baseline; without the pool none of them
    assert dev1 | dev2 | evolve1 <= given[3] and not (dev1 | dev2 | evolve1) & plain_given[3]
    p2 = Proposals.model_validate_json((out / "iter-02" / "proposals.json").read_text())
    p3 = Proposals.model_validate_json((out / "iter-03" / "proposals.json").read_text())
    assert p2.pooled_successes >= 1 and p3.pooled_successes > p2.pooled_successes and p2.pool_evicted == []
    plain3 = Proposals.model_validate_json((tmp_path / "plain" / "iter-03" / "proposals.json").read_text())
    assert plain3.pooled_successes == 0
    # iteration 1 has nothing earlier: the same entries either way
    assert [e.id for e in pooled.given[0]] == [e.id for e in plain.given[0]]


class DistilsTheEvicted(ExperienceDistiller):
    """The real distiller, plus the misleading entry as if a verified run had distilled it again."""

    def distil(self, successes: Sequence[Episode], eta: Eta) -> list[ExperienceEntry]:
        return [*super().distil(successes, eta), MISLEADING]


def test_the_pool_never_brings_back_an_entry_whose_eviction_was_accepted(team_tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proposer = ExperienceProposer()
    settings = EvolveSettings(tasks_dir=str(team_tasks), dev_sample=4, evolve_sample=10, seed=2,
                              experience_pool=True)
    base = h.base_eta().model_copy(update={"experience": [MISLEADING]})
    loop = EvolveLoop(out, settings, MisledPlanners(), base_eta=base, proposer=proposer,
                      distiller=DistilsTheEvicted(), auto_approve=True)
    asyncio.run(loop.run(2))
    first = Decision.model_validate_json((out / "iter-01" / "decision.json").read_text())
    assert first.accepted and first.accepted[0].startswith("evict-experience")  # iteration 1 evicted it
    second = Proposals.model_validate_json((out / "iter-02" / "proposals.json").read_text())
    assert second.pool_evicted == [MISLEADING.id]
    assert MISLEADING.id not in {e.id for e in proposer.given[1]}
    assert MISLEADING.id not in {e.id for e in load_eta(out / "eta.json").experience}


def test_the_cli_flag_is_recorded_and_a_resume_under_another_setting_is_refused(team_tasks: Path, tmp_path: Path,
                                                                              monkeypatch: object) -> None:
    import pocketpilot.cli.evolve as command

    async def close() -> None:
        return None

    monkeypatch.setattr(command, "_planner_factory", lambda *a: (HalfPass(), close))  # type: ignore[attr-defined]
    out = tmp_path / "out"
    args = ["evolve", "--tasks", str(team_tasks), "--out", str(out), "--dev-sample", "2", "--evolve-sample", "4",
            "--no-embedder", "--auto-approve"]
    result = CliRunner().invoke(cli, [*args, "--experience-pool"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "evolve.json").read_text())["settings"]["experience_pool"] is True
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 2 and "experience_pool" in again.output
