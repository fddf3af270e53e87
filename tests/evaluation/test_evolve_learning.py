"""What ``pocketpilot evolve`` learns besides revisions: harmful experience is evicted, evolve successes are distilled.

Scripted planners on the kennel world (a tool module written outside the project, tasks
made by ``tasks generate``): a planner's behaviour depends only on the η it is given, so every
figure here is exact.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from pocketpilot.adapters import Eta, load_eta, save_eta
from pocketpilot.adapters.experience import ExperienceEntry, WorkflowCall, entry_id, retrieve
from pocketpilot.adapters.revision import EvictExperience
from pocketpilot.cli.main import cli
from pocketpilot.contracts import Episode, EpisodeHeader, Finish, PlannerInfo
from pocketpilot.evaluation.evolve import EvolveLoop, ExperienceDistiller, NoDistiller, with_world_tools
from pocketpilot.evaluation.evolve_harm import accumulate, attribute, evictions, failed_and_shown
from pocketpilot.evaluation.evolve_state import Candidate, Decision, EvolveSettings, Harm, Proposals
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import TaskSpec, oracle_actions
from pocketpilot.tasks.split_index import load_split_tasks
from pocketpilot.tracing.trace import read_trace
from pocketpilot.trainer_bridge.candidates import experience_candidate

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import evolve_helpers as h  # noqa: E402

STATUS = [WorkflowCall(tool="kennel_status", check=True)]
MISLEADING = ExperienceEntry(id=entry_id(STATUS), request="Look at the kennel heating, feeding plan and bookings",
                             calls=STATUS, provenance=["seed-episode"])


def _odd(task_id: str) -> bool:
    return hashlib.sha256(task_id.encode()).digest()[0] % 2 == 1


def _shown(eta: Eta, task: TaskSpec) -> bool:
    cfg = eta.experience_config
    return cfg.enabled and any(e.id == MISLEADING.id for e in retrieve(eta.experience, task.goal, k=cfg.k))


class MisledPlanners:
    """The oracle on every task, except one shown the misleading entry: that run stops at once."""

    def __call__(self, task: TaskSpec, eta: Eta) -> ScriptedPlanner:
        if _shown(eta, task):
            return ScriptedPlanner([Finish(summary="Done.")])
        return ScriptedPlanner(oracle_actions(task))


class NoProposer:
    def propose(self, failures: Sequence[Episode], eta: Eta, experience: Sequence[object]) -> tuple[list[Candidate], list[str]]:
        return [], ["nothing to propose"]


class ExperienceProposer:
    """The library's new entries as one candidate, nothing else (the real experience candidate)."""

    def __init__(self) -> None:
        self.given: list[list[ExperienceEntry]] = []

    def propose(self, failures: Sequence[Episode], eta: Eta,
                experience: Sequence[ExperienceEntry]) -> tuple[list[Candidate], list[str]]:
        self.given.append(list(experience))
        c = experience_candidate(eta, experience)
        if c is None:
            return [], ["no new entries"]
        return [Candidate(kind=c.kind, revision=c.revision, summary="experience", evidence=c.evidence)], []


def _loop(out: Path, tasks: Path, planners: object, *, base: Eta, proposer: object, distiller: object,
          evolve: int = 10, dev: int = 4, **settings: object) -> EvolveLoop:
    s = EvolveSettings(tasks_dir=str(tasks), dev_sample=dev, evolve_sample=evolve, seed=2, **settings)
    return EvolveLoop(out, s, planners, base_eta=base, proposer=proposer, distiller=distiller, auto_approve=True)


def test_an_entry_that_measures_as_harmful_is_evicted_by_a_revision(team_tasks: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    base = h.base_eta().model_copy(update={"experience": [MISLEADING]})
    asyncio.run(_loop(out, team_tasks, MisledPlanners(), base=base, proposer=NoProposer(),
                      distiller=NoDistiller()).run(1))
    d = out / "iter-01"
    harm = Harm.model_validate_json((d / "harm.json").read_text())
    outcomes = {json.loads(line)["task_id"]: json.loads(line) for line in
                (d / "evolve" / "base" / "outcomes.jsonl").read_text().splitlines()}
    rerun = {json.loads(line)["task_id"]: json.loads(line)["success"] for line in
             (d / "evolve" / "no-experience" / "outcomes.jsonl").read_text().splitlines()}
    harmed = harm.harmed[MISLEADING.id]
    assert harm.method == "paired" and len(harmed) >= 2 and harm.accumulated == {MISLEADING.id: len(harmed)}
    assert set(rerun) == set(harm.shown)  # only the failed tasks shown experience ran again, with it off
    for task in harmed:
        assert not outcomes[task]["success"] and rerun[task]  # failed with it, passed without
        episode, _ = read_trace(out / outcomes[task]["trace"])
        entries = [p["params"]["entries"] for p in episode.header.policies if p["name"] == "experience_hints"]
        assert entries == [[MISLEADING.id]]  # the header recorded the entry shown
    (evict,) = harm.candidates
    assert evict.kind == "evict_experience" and evict.revision.ops == [EvictExperience(entry_id=MISLEADING.id)]
    decision = Decision.model_validate_json((d / "decision.json").read_text())
    assert decision.accepted == [evict.id] and decision.measured[evict.id].net == len(harmed)
    assert [e.id for e in load_eta(out / "eta.json").experience] == []  # evicted, through the approved revision
    assert decision.revision is not None and evict.id in decision.revision.rationale

    # under the threshold the harm is recorded and nothing is proposed: the entry stays
    kept = tmp_path / "kept"
    asyncio.run(_loop(kept, team_tasks, MisledPlanners(), base=base, proposer=NoProposer(),
                      distiller=NoDistiller(), evict_threshold=len(harmed) + 1).run(1))
    harm = Harm.model_validate_json((kept / "iter-01" / "harm.json").read_text())
    assert harm.harmed[MISLEADING.id] == harmed and harm.candidates == []
    assert [e.id for e in load_eta(kept / "eta.json").experience] == [MISLEADING.id]


def _harm(harmed: dict[str, list[str]]) -> Harm:
    return Harm(method="previous", shown={}, without={}, harmed=harmed, accumulated={})


def test_the_attribution_rule_pairs_tasks_and_accumulates_over_iterations() -> None:
    shown = {"t1": ["exp-aaaa", "exp-bbbb"], "t2": ["exp-aaaa"], "t3": ["exp-bbbb"], "t4": ["exp-aaaa"]}
    # t1 and t2 passed without experience, t3 failed without it too, t4 was not in the earlier sample
    harmed = attribute(shown, {"t1": True, "t2": True, "t3": False})
    assert harmed == {"exp-aaaa": ["t1", "t2"], "exp-bbbb": ["t1"]}
    earlier = [_harm({"exp-bbbb": ["t9"], "exp-gone": ["t1", "t2"]})]
    total = accumulate(earlier, harmed, ["exp-aaaa", "exp-bbbb", "exp-cccc"])
    assert total == {"exp-aaaa": 2, "exp-bbbb": 2}  # an entry no longer in η is not counted
    assert accumulate(earlier, {}, ["exp-bbbb"]) == {"exp-bbbb": 1}


def test_evictions_need_the_threshold_and_new_harm(team_tasks: Path) -> None:
    other = MISLEADING.model_copy(update={"id": "exp-other0000", "request": "Book a stay",
                                          "calls": [WorkflowCall(tool="book_stay")]})
    eta = with_world_tools(h.base_eta(), load_split_tasks(team_tasks, ["dev"])["dev"])
    eta = eta.model_copy(update={"experience": [MISLEADING, other]})
    made = evictions(eta, {MISLEADING.id: 2, other.id: 3}, {MISLEADING.id: ["t1"]}, 2, 3)
    assert [c.revision.ops for c in made] == [[EvictExperience(entry_id=MISLEADING.id)]]  # other: no new harm
    assert made[0].evidence == [{"entry": MISLEADING.id, "task_id": "t1", "iteration": 3}]
    assert evictions(eta, {MISLEADING.id: 1}, {MISLEADING.id: ["t1"]}, 2, 3) == []


def test_failed_and_shown_reads_the_header_and_skips_passes_and_evicted_entries() -> None:
    def ep(task: str, entries: list[str]) -> Episode:
        return Episode(header=EpisodeHeader(episode_id=f"e-{task}", request="r", task_id=task,
                                            planner=PlannerInfo(backend="scripted", model="scripted"),
                                            policies=[{"name": "experience_hints", "params": {"entries": entries}}]))

    got = failed_and_shown({"a": False, "b": True, "c": False}, [ep("a", ["exp-1", "exp-2"]), ep("b", ["exp-1"]),
                                                                 ep("c", ["exp-3"])], ["exp-1", "exp-2"])
    assert got == {"a": ["exp-1", "exp-2"]}


class LearnsFromExamples:
    """Dev tasks fail, and so do half the evolve tasks, until η holds experience; the other evolve tasks pass."""

    def __call__(self, task: TaskSpec, eta: Eta) -> ScriptedPlanner:
        knows = bool(eta.experience) or (task.split == "evolve" and not _odd(task.id))
        return ScriptedPlanner(oracle_actions(task) if knows else [Finish(summary="Done.")])


def test_evolve_successes_are_distilled_and_the_test_split_is_never_opened(team_tasks: Path,
                                                                           tmp_path: Path) -> None:
    out = tmp_path / "out"
    proposer = ExperienceProposer()
    with h.files_opened() as seen:
        result = asyncio.run(_loop(out, team_tasks, LearnsFromExamples(), base=h.base_eta(), proposer=proposer,
                                   distiller=ExperienceDistiller()).run(2))
    assert result.iterations_done == 2
    assert not seen & h.split_files(team_tasks, "test")
    traces = {p for p in seen if p.endswith(".jsonl") and "/traces/" in p}
    assert traces and all(p.startswith(str(out.resolve())) for p in traces)  # only the loop's own runs

    first = Proposals.model_validate_json((out / "iter-01" / "proposals.json").read_text())
    second = Proposals.model_validate_json((out / "iter-02" / "proposals.json").read_text())
    assert first.dev_successes == 0 and first.evolve_successes == 0 and first.candidates == []
    assert second.dev_successes == 0 and second.evolve_successes >= 2
    base_runs = [json.loads(line) for line in (out / "iter-01" / "evolve" / "base" / "outcomes.jsonl").read_text()
                 .splitlines()]
    evolve_episodes = {read_trace(out / o["trace"])[0].header.episode_id: o for o in base_runs if o["success"]}
    assert {o["task_id"] for o in base_runs} <= set(h.split_ids(team_tasks, "evolve"))
    library = load_eta(out / "eta.json").experience  # the η the next iteration starts from
    assert library and all(set(e.provenance) <= set(evolve_episodes) for e in library)
    # every entry came from an evolve baseline success of iteration 1 (a success without a tool call gives none)
    assert len({p for e in library for p in e.provenance}) >= 2
    assert [e.id for e in proposer.given[1]] == [e.id for e in library]
    decision = Decision.model_validate_json((out / "iter-02" / "decision.json").read_text())
    assert decision.accepted and decision.revision is not None


def test_the_cli_flags_set_the_threshold_and_the_pairing(team_tasks: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import pocketpilot.cli.evolve as command

    async def close() -> None:
        return None

    monkeypatch.setattr(command, "_planner_factory", lambda *a: (MisledPlanners(), close))
    eta_file = tmp_path / "eta.json"
    from pocketpilot.evaluation.task_episode import load_harness_kit

    save_eta(load_harness_kit().eta.model_copy(update={"experience": [MISLEADING]}), eta_file)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["evolve", "--tasks", str(team_tasks), "--out", str(out), "--eta",
                                      str(eta_file), "--dev-sample", "2", "--evolve-sample", "10", "--seed", "2",
                                      "--no-embedder", "--auto-approve", "--evict-threshold", "3",
                                      "--harm-pairing", "previous"])
    assert result.exit_code == 0, result.output
    settings = json.loads((out / "evolve.json").read_text())["settings"]
    assert settings["evict_threshold"] == 3 and settings["harm_pairing"] == "previous"
    harm = Harm.model_validate_json((out / "iter-01" / "harm.json").read_text())
    # the same sample as the paired test's, where tasks failed with the entry: no earlier baseline, no rerun
    assert harm.method == "previous" and harm.shown and harm.without == {} and harm.harmed == {}
    assert not (out / "iter-01" / "evolve" / "no-experience").exists()
