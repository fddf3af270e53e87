"""The policy ablation (``pocketpilot.evaluation.ablation``, ``bench/bench_ablation.py``), with scripted planners.

A tiny dev folder of three sandbox tasks: one where ``send_back`` earns the task (the planner
refuses after a fixable error and, sent back, fixes the call), one where ``asked_back`` costs it
(a clarification task whose question repeats the request: sent back, the planner finishes
instead of asking), and one no policy acts on. The planners react to what they read, as a
greedy model does: sent back, they take their second script.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from bench_scripts import bench_script
from scripted_actions import call

from pocketpilot.errors import UsageError
from pocketpilot.evaluation.ablation import (
    COSTS,
    KEEP,
    UNUSED,
    AblationReport,
    AblationRow,
    Baseline,
    ablatable,
    check_policies,
    load_ablation,
    run_ablation,
    summarise,
    verdict,
    without_policy,
)
from pocketpilot.evaluation.task_episode import load_harness_kit
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions

DATA = Path(__file__).resolve().parents[2] / "pocketpilot" / "tasks" / "data"
EARBUDS, CLARIFY, PLAIN = "earbuds-noise-cancelling", "clarify-text-him", "launcher-open-spotify"


SCRIPTS = {
    # a fixable error (an unknown mode), then a refusal; sent back, the right call
    EARBUDS: ([call("get_earbuds_status"), call("set_noise_control", mode="nc"), {"kind": "refuse", "reason": "cannot"}],
              [call("set_noise_control", mode="noise_cancelling"), {"kind": "finish", "summary": "On."}]),
    # the task wants the question asked; sent back as a repeat of the request, the planner finishes
    CLARIFY: ([{"kind": "ask_user", "question": "Text him that I'm on my way?"}],
              [{"kind": "finish", "summary": "Done."}]),
}


class Reactive(ScriptedPlanner):
    """Replays ``first`` until the harness holds a step (``not_allowed``), then ``after``."""

    def __init__(self, first: list, after: list) -> None:
        super().__init__(first)
        self._after = ScriptedPlanner(after)

    async def plan(self, request):  # type: ignore[no-untyped-def]
        tool = [m for m in request.messages if m.role == "tool"]
        if self._after is not None and tool and "not_allowed" in tool[-1].content:
            self._items, self._next, self._after = self._after._items, 0, None
        return await super().plan(request)


class Planners:
    """The planner for (task, policy left out), recording each run asked for."""

    def __init__(self, changed: dict[tuple[str, str], list] | None = None) -> None:
        self.calls: list[tuple[str, str | None]] = []
        self.changed = changed or {}

    def __call__(self, task, off):  # type: ignore[no-untyped-def]
        self.calls.append((task.id, off))
        if (task.id, off) in self.changed:  # a run that differs although the policy never acted
            return ScriptedPlanner(self.changed[(task.id, off)])
        if task.id in SCRIPTS:
            return Reactive(*SCRIPTS[task.id])
        return ScriptedPlanner(oracle_actions(task))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ablation") / "tasks"
    out.mkdir()
    for name in (EARBUDS, CLARIFY, PLAIN):
        spec = yaml.safe_load((DATA / f"{name}.yaml").read_text(encoding="utf-8"))
        spec["split"] = "dev"
        (out / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def kit():
    return load_harness_kit()


@pytest.fixture(scope="module")
def bench():
    with bench_script("bench_ablation") as module:
        yield module


def _tasks(folder: Path):
    return load_suite("dev", directory=folder)


# --------------------------------------------------------------------------- attribution and cost


async def test_each_policy_reruns_only_the_tasks_it_acted_on_and_pays_what_they_show(folder, kit) -> None:
    tasks = _tasks(folder)
    planners = Planners()
    report = await run_ablation(tasks, planners, kit=kit)
    by_id = {b.task_id: b for b in report.baseline}
    assert {t: sorted(b.acted) for t, b in by_id.items()} == {EARBUDS: ["send_back"], CLARIFY: ["asked_back"], PLAIN: []}
    assert by_id[EARBUDS].success and not by_id[CLARIFY].success and by_id[PLAIN].success
    # one baseline run per task, then one rerun per (policy, task it acted on): nothing else ran
    assert planners.calls == [(t.id, None) for t in tasks] + [(EARBUDS, "send_back"), (CLARIFY, "asked_back")]
    results = {r.policy: r for r in report.results()}
    assert list(results) == ablatable(kit)
    send, asked = results["send_back"], results["asked_back"]
    assert (send.intervened, send.passed_with, send.passed_without, send.cost, send.verdict) == (1, 1, 0, -1, KEEP)
    assert (asked.intervened, asked.passed_with, asked.passed_without, asked.cost, asked.verdict) == (1, 0, 1, 1, COSTS)
    assert (asked.gained, asked.lost, send.gained, send.lost) == (1, 0, 0, 1)
    assert all(r.verdict == UNUSED and r.cost == 0 for n, r in results.items() if n not in ("send_back", "asked_back"))
    assert report.ablation() == {n: {"send_back": -1, "asked_back": 1}.get(n, 0) for n in ablatable(kit)}
    (row,) = [r for r in report.rows if r.policy == "asked_back"]
    assert (row.task_id, row.stop_with, row.stop_without, row.acted_steps) == (CLARIFY, "finish", "ask_user", [0])


async def test_only_the_policies_asked_for_are_ablated(folder, kit) -> None:
    planners = Planners()
    report = await run_ablation(_tasks(folder), planners, kit=kit, policies=["asked_back"])
    assert report.policies == ["asked_back"] and [r.task_id for r in report.rows] == [CLARIFY]
    assert planners.calls[-1] == (CLARIFY, "asked_back") and len(planners.calls) == 4


async def test_a_policy_that_shapes_batches_is_rerun_on_every_task(folder, kit) -> None:
    """Its groups change the decoding grammar of every step, and no step records that."""
    from pocketpilot.adapters.eta import PolicyEntry
    from pocketpilot.evaluation.task_episode import HarnessKit

    eta = kit.eta.model_copy(update={"policies": [*kit.eta.policies, PolicyEntry(name="reads_apart")]})
    planners = Planners()
    report = await run_ablation(_tasks(folder), planners, kit=HarnessKit(kit.library, eta=eta),
                                policies=["reads_apart", "loop_guard"], verify_untouched=1)
    assert [r.task_id for r in report.rows if r.policy == "reads_apart"] == [t.id for t in _tasks(folder)]
    assert not [r for r in report.rows if r.policy == "loop_guard"]
    assert [u.policy for u in report.untouched] == ["loop_guard"]  # nothing of reads_apart's is untouched


def test_a_policy_left_out_is_left_out_of_the_set_the_session_runs(kit) -> None:
    off = without_policy(kit, "loop_guard")
    assert [p.name for p in off.eta.policies] == [p.name for p in kit.eta.policies if p.name != "loop_guard"]
    assert off.library is kit.library and off.eta.notes == kit.eta.notes and off.eta.version != kit.eta.version


async def test_the_untouched_check_reruns_tasks_a_policy_never_acted_on_and_reports_a_change(folder, kit) -> None:
    # N tasks a policy never acted on, the longest runs first, each policy starting at another
    report = await run_ablation(_tasks(folder), Planners(), kit=kit, policies=["loop_guard", "send_back"],
                                verify_untouched=2)
    steps = {b.task_id: b.steps for b in report.baseline}
    assert steps[EARBUDS] > steps[CLARIFY] == steps[PLAIN]  # CLARIFY comes first of the two in the selection
    assert [(u.policy, u.task_id) for u in report.untouched] == [
        ("loop_guard", EARBUDS), ("loop_guard", CLARIFY), ("send_back", PLAIN), ("send_back", CLARIFY)]
    assert all(u.identical for u in report.untouched) and "exactness: 4 of 4" in report.markdown()
    # a planner that behaves otherwise once loop_guard is gone, although loop_guard never acted on
    # PLAIN: the exactness assumption fails there, and the check says so instead of raising
    planners = Planners(changed={(PLAIN, "loop_guard"): [{"kind": "finish", "summary": "Opened."}]})
    report = await run_ablation(_tasks(folder), planners, kit=kit, policies=["loop_guard"], verify_untouched=3)
    (bad,) = report.mismatches()
    assert (bad.policy, bad.task_id, bad.first_difference, bad.identical) == ("loop_guard", PLAIN, 0, False)
    assert "exactness: 2 of 3" in report.markdown() and f"loop_guard on {PLAIN}" in report.markdown()


def test_cost_arithmetic_and_verdicts() -> None:
    def row(task: str, with_: bool, without: bool) -> AblationRow:
        return AblationRow(policy="p", task_id=task, group="g", passed_with=with_, passed_without=without,
                           stop_with=None, stop_without=None, steps_with=1, steps_without=1, acted_steps=[0])

    rows = [row("a", True, False), row("b", False, True), row("c", False, True), row("d", True, True),
            row("e", False, False)]
    r = summarise("p", rows)
    assert (r.intervened, r.passed_with, r.passed_without, r.gained, r.lost, r.cost) == (5, 2, 3, 2, 1, 1)
    assert r.verdict == COSTS and summarise("q", rows).verdict == UNUSED
    assert verdict(3, 0) == KEEP and verdict(3, -2) == KEEP and verdict(1, 1) == COSTS and verdict(0, 0) == UNUSED


def test_the_json_and_the_table_have_their_shape() -> None:
    base = [Baseline(task_id="a", group="g", success=True, stop_reason="finish", steps=2, acted={"p": [1]},
                     actions=[{"kind": "finish"}], planner={"model": "m"})]
    rows = [AblationRow(policy="p", task_id="a", group="g", passed_with=True, passed_without=False, stop_with="finish",
                        stop_without="refuse", steps_with=2, steps_without=1, acted_steps=[1])]
    report = AblationReport(split="dev", policies=["p", "q"], baseline=base, rows=rows)
    data = json.loads(json.dumps(report.to_json()))
    assert data["schema"] == "pocketpilot.bench.ablation/1" and data["ablation"] == {"p": -1, "q": 0}
    assert [r["policy"] for r in data["results"]] == ["p", "q"] and data["rows"][0]["acted_steps"] == [1]
    assert "actions" not in data["baseline"][0] and "planner" not in data["baseline"][0]
    lines = report.markdown().splitlines()
    assert lines[2] == "| policy | tasks it acted on | passed with | passed without | net cost (without − with) | verdict |"
    assert lines[4] == "| p | 1 | 1 | 0 | -1 | keep |" and lines[5] == "| q | 0 | 0 | 0 | +0 | never intervened |"


# --------------------------------------------------------------------------- bad input


def test_the_policies_asked_for_are_checked(kit) -> None:
    assert check_policies([], kit) == ablatable(kit) == ["id_for_name", "scope_guard", "undo_guard", "loop_guard",
                                                           "repeat_failure", "held_calls", "send_back", "asked_back"]
    assert check_policies(["loop_guard", "loop_guard"], kit) == ["loop_guard"]
    for name, says in (("nope", "unknown policy"), ("gates", "safety policy"), ("confirmation", "safety policy"),
                       ("reads_apart", "not in η's policy set")):
        with pytest.raises(UsageError, match=says):
            check_policies([name], kit)


@pytest.mark.parametrize("argv, says", [
    (["--policies", "nope"], "unknown policy 'nope'"),
    (["--policies", "loop_guard,confirmation"], "confirmation is a safety policy"),
    (["--group", "memory"], "no tasks selected"),
    (["--task-id", "no-such-task"], "unknown task ids"),
    (["--verify-untouched", "-1"], "--verify-untouched"),
])
def test_bad_input_exits_2_with_one_line(bench, folder, kit, capsys, argv, says) -> None:
    planners = Planners()
    assert bench.main(["--tasks", str(folder), *argv], planner_for=planners, kit=kit) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and planners.calls == []


# --------------------------------------------------------------------------- the script, end to end


def test_the_script_runs_writes_its_files_and_starts_again_from_its_traces(bench, folder, kit, tmp_path, capsys) -> None:
    out, md, traces = tmp_path / "a.json", tmp_path / "a.md", tmp_path / "traces"
    argv = ["--tasks", str(folder), "--split", "dev", "--out", str(out), "--markdown", str(md)]
    first = Planners()
    assert bench.main([*argv, "--trace-dir", str(traces)], planner_for=first, kit=kit) == 0
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["ablation"]["asked_back"] == 1 and data["ablation"]["send_back"] == -1
    assert md.read_text().strip() in printed and '"asked_back": 1' in printed
    assert (traces / "outcomes.jsonl").exists() and len(list((traces / "harness").glob("*.jsonl"))) == 3
    assert len(list((traces / "without-asked_back").glob("*.jsonl"))) == 1

    again = Planners()  # from the traces: only the reruns run
    assert bench.main([*argv, "--from-traces", str(traces)], planner_for=again, kit=kit) == 0
    assert again.calls == [(EARBUDS, "send_back"), (CLARIFY, "asked_back")]
    redo = json.loads(out.read_text())
    assert redo["ablation"] == data["ablation"] and redo["baseline"] == data["baseline"]


class Dying(Planners):
    """Planners whose ``at``-th run is never made: the process dies there, as a kill would."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def __call__(self, task, off):  # type: ignore[no-untyped-def]
        if len(self.calls) + 1 == self.at:
            raise KeyboardInterrupt
        return super().__call__(task, off)


def test_a_killed_run_resumes_where_it_stopped(bench, folder, kit, tmp_path) -> None:
    traces, out = tmp_path / "traces", tmp_path / "a.json"
    argv = ["--tasks", str(folder), "--trace-dir", str(traces), "--out", str(out)]
    with pytest.raises(KeyboardInterrupt):  # in the baseline's second task
        bench.main(argv, planner_for=Dying(2), kit=kit)
    with pytest.raises(KeyboardInterrupt):  # resumed, then killed again at the second rerun
        bench.main([*argv, "--resume"], planner_for=Dying(4), kit=kit)
    last = Planners()
    assert bench.main([*argv, "--resume"], planner_for=last, kit=kit) == 0
    assert last.calls == [(CLARIFY, "asked_back")]  # all that was left
    assert json.loads(out.read_text())["ablation"] == {n: {"send_back": -1, "asked_back": 1}.get(n, 0)
                                                       for n in ablatable(kit)}
    assert bench.main(argv[:2] + ["--resume"], planner_for=Planners(), kit=kit) == 2  # nowhere to resume from


def _strip_interventions(path: Path) -> None:
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "step":
            record["step"].pop("interventions")
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


async def test_traces_that_cannot_pair_are_refused(bench, folder, kit, tmp_path, capsys) -> None:
    traces = tmp_path / "traces"
    await run_ablation(_tasks(folder), Planners(), kit=kit, policies=["asked_back"], trace_dir=traces)
    argv = ["--tasks", str(folder), "--from-traces", str(traces)]
    # run under another set: a policy missing from the baseline's
    assert bench.main(argv, planner_for=Planners(), kit=without_policy(kit, "undo_guard")) == 2
    assert "run the baseline under this η" in capsys.readouterr().err
    # a selection the traces do not hold
    assert bench.main([*argv[:2], "--from-traces", str(tmp_path / "empty")], planner_for=Planners(), kit=kit) == 2
    assert "no harness outcomes" in capsys.readouterr().err
    # written before steps recorded their interventions: every step would read as untouched
    _strip_interventions(next((traces / "harness").glob("*.jsonl")))
    assert bench.main(argv, planner_for=Planners(), kit=kit) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "before steps recorded their interventions" in err


# --------------------------------------------------------------------------- what evolve reads


def test_the_ablation_file_evolve_reads(tmp_path) -> None:
    report = AblationReport(policies=["p"], baseline=[], rows=[])
    full = tmp_path / "report.json"
    full.write_text(json.dumps(report.to_json()))
    assert load_ablation(full) == {"p": 0}
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"undo_guard": 2}))
    assert load_ablation(plain) == {"undo_guard": 2}
    for text in ("not json", json.dumps({"undo_guard": "2"}), json.dumps([1, 2]), json.dumps({"p": True})):
        plain.write_text(text)
        with pytest.raises(UsageError):
            load_ablation(plain)
    with pytest.raises(UsageError, match="cannot read"):
        load_ablation(tmp_path / "missing.json")



def test_evolve_proposes_leaving_out_a_policy_the_ablation_shows_costing_tasks(kit) -> None:
    from pocketpilot.evaluation.evolve import CandidateProposer

    made, _ = CandidateProposer(ablation={"undo_guard": 2, "loop_guard": 1, "gates": 5}).propose([], kit.eta, [])
    (off,) = [c for c in made if c.kind == "policy_off"]
    assert "undo_guard" in off.summary  # one task is noise (min_cost 2); a safety policy is never proposed
    assert not [c for c in CandidateProposer().propose([], kit.eta, [])[0] if c.kind == "policy_off"]


def test_evolve_reads_the_ablation_file_it_is_given(tmp_path, monkeypatch) -> None:
    from click.testing import CliRunner

    import pocketpilot.evaluation.evolve as evolve_module
    from pocketpilot.cli.main import cli

    seen: dict[str, object] = {}

    class Stop(evolve_module.EvolveLoop):  # records the proposer, then stops before anything runs
        def __init__(self, out, settings, factory, **kw) -> None:  # type: ignore[no-untyped-def]
            seen["ablation"] = kw["proposer"].ablation
            raise UsageError("stopped by the test")

    monkeypatch.setattr(evolve_module, "EvolveLoop", Stop)
    report = tmp_path / "ablation.json"
    report.write_text(json.dumps(AblationReport(policies=["undo_guard"], baseline=[], rows=[
        AblationRow(policy="undo_guard", task_id=t, group="g", passed_with=False, passed_without=True, stop_with=None,
                    stop_without=None, steps_with=1, steps_without=1, acted_steps=[0]) for t in ("a", "b")]).to_json()))
    args = ["evolve", "--tasks", str(tmp_path), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(cli, [*args, "--ablation", str(report)])
    assert seen["ablation"] == {"undo_guard": 2} and "stopped by the test" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    seen.clear()
    result = CliRunner().invoke(cli, [*args, "--ablation", str(bad)])
    assert result.exit_code == 2 and "not a JSON ablation file" in result.output and not seen
    assert len(result.output.strip().splitlines()) == 1
