from __future__ import annotations

import builtins
import json
import sys
from pathlib import Path

import pytest

from pocketpilot.contracts import CriterionResult, Finish, ToolResult, Verdict
from pocketpilot.errors import UsageError
from pocketpilot.evaluation.compare import run_task
from pocketpilot.harness.planners.scripted import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions
from pocketpilot.tracing.trace import read_trace
from pocketpilot.trainer_bridge.export_io import ExportDependencyError, format_for, read_jsonl, write_rows
from pocketpilot.trainer_bridge.export_rl import rl_groups, rollout
from pocketpilot.trainer_bridge.export_sft import label_turns, sft_record
from pocketpilot.trainer_bridge.export_synthetic import make_episode, synthetic_episode

OK = Verdict(success=True, criteria=[CriterionResult(name="a", passed=True), CriterionResult(name="b", passed=True)])
FAILED = Verdict(success=False, criteria=[CriterionResult(name="a", passed=True), CriterionResult(name="b", passed=False)])


def _recovering(verdict: Verdict | None = OK, **kw):
    return make_episode(
        [
            {"invalid": "{not json"},
            {"calls": [("get_battery", {"unit": "kelvin"})], "results": [ToolResult.failure("invalid_arguments", "bad unit")]},
            {"calls": [("get_battery", {})], "results": [ToolResult.success({"level": 80})]},
            {"calls": [("set_wifi", {"enabled": False})], "results": [ToolResult.success({"wifi": False})]},
            {"action": Finish(summary="Wifi off, battery 80%."), "results": []},
        ],
        verdict=verdict,
        **kw,
    )


def test_mask_supervises_recovery_and_masks_errors_keeping_feedback() -> None:
    ep = _recovering()
    assert label_turns(ep) == ["invalid", "erred", "recovery", "ok", "final"]
    rec = sft_record(ep)
    assert rec.eligible
    assistants = [(i, m) for i, m in enumerate(rec.messages) if m["role"] == "assistant"]
    assert [m["weight"] for _, m in assistants] == [0, 0, 1, 1, 1]
    assert [rec.train_mask[i] for i, _ in assistants] == [0, 0, 1, 1, 1]
    assert sum(rec.train_mask) == 3  # nothing but supervised assistant turns
    # the error feedback stays in context right after the masked turns
    assert "invalid_action" in rec.messages[assistants[0][0] + 1]["content"]
    assert "invalid_arguments" in rec.messages[assistants[1][0] + 1]["content"]
    assert set(rec.messages[0]) == {"role", "content", "tool_calls", "tool_call_id", "weight"}
    tools = json.loads(rec.tools)
    assert {t["function"]["name"] for t in tools} == {"set_wifi", "send_sms", "get_battery", "pp_finish"}
    called = {c["function"]["name"] for m in rec.messages for c in m["tool_calls"] or []}
    assert called <= {t["function"]["name"] for t in tools}
    assert any(t.get("x-pocketpilot", {}).get("destructive") for t in tools)


@pytest.mark.parametrize("verdict,complete", [(None, True), (FAILED, True), (OK, False)])
def test_only_verified_successful_complete_episodes_supervise(verdict, complete) -> None:
    rec = sft_record(_recovering(verdict), complete=complete)
    assert not rec.eligible
    assert sum(rec.train_mask) == 0
    assert all(m["weight"] in (0, None) for m in rec.messages)


def test_rollout_carries_reward_cost_and_behaviour_policy() -> None:
    ep = _recovering(FAILED)
    r = rollout(ep)
    assert (r.success, r.progress) == (False, 0.5)
    assert r.tool_calls == 3 and r.steps == 5
    assert r.output_tokens == sum(s.planner.completion_tokens for s in ep.steps)
    assert r.behaviour["model_sha256"] == ep.header.planner.model_sha256
    assert r.behaviour["quant_type"] == "Q4_K_M" and r.behaviour["sampler"]["temperature"] == 0.7
    assert [t["token_ids"] for t in r.turns] == [list(s.planner.token_ids) for s in ep.steps]
    assert r.turns[0]["token_logprobs"] == pytest.approx(ep.steps[0].planner.token_logprobs)
    with pytest.raises(UsageError):
        rollout(_recovering(None))


def test_groups_by_task_with_exact_group_size() -> None:
    eps = [synthetic_episode(i, tasks=2) for i in range(9)]  # tasks 000 (5 eps) and 001 (4 eps)
    eps.append(_recovering(None, task_id="synthetic-000", episode_id="noverdict"))
    groups = rl_groups(eps, group_size=2)
    assert [(g.task_id, g.size) for g in groups] == [("synthetic-000", 2)] * 2 + [("synthetic-001", 2)] * 2
    assert all("noverdict" not in [r.episode_id for r in g.rollouts] for g in groups)
    g = groups[0]
    assert g.success_rate == sum(r.success for r in g.rollouts) / 2
    assert g.behaviour_consistent
    whole = rl_groups(eps)
    assert [g.size for g in whole] == [5, 4]
    with pytest.raises(UsageError):
        rl_groups(eps, group_size=0)


@pytest.fixture(scope="module")
def oracle_traces(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Real traces of the harness: oracle runs of dev tasks with different tool schemas."""
    import asyncio

    out = tmp_path_factory.mktemp("traces")
    tasks = [t for t in load_suite("dev") if t.oracle][:6]

    async def go() -> None:
        for task in tasks:
            await run_task(task, ScriptedPlanner(oracle_actions(task)), trace_dir=out)
            await run_task(task, ScriptedPlanner(oracle_actions(task)), trace_dir=out)

    asyncio.run(go())
    return sorted(out.glob("*.jsonl"))


def test_datasets_loads_jsonl_and_parquet_as_is(oracle_traces: list[Path], tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    episodes = [read_trace(p) for p in oracle_traces]
    sft = [sft_record(ep, complete=c).row() for ep, c in episodes]
    rl = [g.row() for g in rl_groups(ep for ep, _ in episodes)]
    assert sft and rl and all(r["eligible"] for r in sft)
    for kind, rows in (("sft", sft), ("rl", rl)):
        for fmt in ("json", "parquet"):
            path = tmp_path / f"{kind}.{'jsonl' if fmt == 'json' else 'parquet'}"
            assert write_rows(rows, path, kind) == len(rows)
            ds = datasets.load_dataset(fmt, data_files=str(path), split="train")
            assert ds.num_rows == len(rows)
            if kind == "sft":
                assert ds[0]["train_mask"] == rows[0]["train_mask"]
                assert [m["role"] for m in ds[0]["messages"]] == [m["role"] for m in rows[0]["messages"]]
                assert json.loads(ds[0]["tools"]) == json.loads(rows[0]["tools"])
            else:
                assert ds[0]["rollouts"][0]["episode_id"] == rows[0]["rollouts"][0]["episode_id"]
                assert ds[0]["rollouts"][0]["success"] is True


def test_jsonl_needs_no_pyarrow_and_parquet_says_what_to_install(monkeypatch, tmp_path: Path) -> None:
    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError("no pyarrow")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    for mod in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, mod)
    rows = [sft_record(_recovering()).row()]
    assert write_rows(rows, tmp_path / "a.jsonl", "sft") == 1
    assert list(read_jsonl(tmp_path / "a.jsonl"))[0]["train_mask"] == rows[0]["train_mask"]
    with pytest.raises(ExportDependencyError, match=r"pocketpilot\[export\]"):
        write_rows(rows, tmp_path / "a.parquet", "sft")
    assert not (tmp_path / "a.parquet").exists()


def test_bad_format_and_bad_rows_are_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown export format"):
        format_for(tmp_path / "x.csv")
    pytest.importorskip("pyarrow")
    with pytest.raises(UsageError, match="does not fit"):
        write_rows([{"id": 1, "messages": "nope"}], tmp_path / "bad.parquet", "sft")
    assert not list(tmp_path.glob("*bad*"))  # no partial file left behind
    (tmp_path / "torn.jsonl").write_text('{"a": 1}\n[1]\n')
    with pytest.raises(UsageError, match="expected a JSON object"):
        list(read_jsonl(tmp_path / "torn.jsonl"))
