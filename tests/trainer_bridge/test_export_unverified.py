"""Exports of runs no verifier judged (free runs) and of nothing at all, as a user meets them:
through the CLI, read back with ``datasets.load_dataset``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pocketpilot.evaluation.compare import run_task
from pocketpilot.executor.sandbox import SandboxExecutor, SandboxPhone
from pocketpilot.harness import AllowAll, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions
from pocketpilot.trainer_bridge.export_io import EmptyExportError, write_rows

FREE = [
    {"kind": "tool_call", "calls": [{"name": "set_wifi", "arguments": {"enabled": False}}]},
    {"kind": "finish", "summary": "wifi is off"},
]


def cli(*args: str) -> subprocess.CompletedProcess:
    if args[:1] == ("export",):
        args = (*args, "--no-memory-db")  # these runs used no memory store (no deletion ledger to consult)
    return subprocess.run([sys.executable, "-m", "pocketpilot", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_DATASETS_OFFLINE": "1"})


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Two free runs of one request (no task, no verdict) and one verified oracle run."""
    free = tmp_path_factory.mktemp("free")
    judged = tmp_path_factory.mktemp("judged")
    task = next(t for t in load_suite("dev") if t.oracle)

    async def go() -> None:
        for _ in range(2):
            session = Session(ScriptedPlanner(FREE), SandboxExecutor(SandboxPhone()), tools=["set_wifi"],
                              confirm=AllowAll(), trace_dir=free)
            await session.run("turn wifi off")
        await run_task(task, ScriptedPlanner(oracle_actions(task)), trace_dir=judged)

    asyncio.run(go())
    return {"free": sorted(free.glob("*.jsonl")), "judged": sorted(judged.glob("*.jsonl"))}


def _load(path: Path, cache: Path):
    datasets = pytest.importorskip("datasets")
    fmt = "json" if path.suffix == ".jsonl" else "parquet"
    return datasets.load_dataset(fmt, data_files=str(path), split="train", cache_dir=str(cache))


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_free_runs_are_exported_unverified_with_a_note(traces, tmp_path, suffix):
    files = [str(p) for p in traces["free"] + traces["judged"]]
    sft = tmp_path / f"sft{suffix}"
    out = cli("export", "sft", *files, "-o", str(sft))
    assert out.returncode == 0, out.stderr
    assert "note: 2 of 3 trace(s) have no verdict" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    ds = _load(sft, tmp_path / "cache")
    assert ds.num_rows == 3
    by_verified = {row["verified"]: row for row in ds}
    free_row, judged_row = by_verified[False], by_verified[True]
    assert sum(free_row["train_mask"]) == 0 and not free_row["eligible"]  # nothing unverified is supervised
    assert "ok" in free_row["turn_labels"] and free_row["turn_labels"][-1] == "final"
    assert sum(judged_row["train_mask"]) > 0

    rl = tmp_path / f"rl{suffix}"
    out = cli("export", "rl", *files, "-o", str(rl), "--min-size", "1")
    assert out.returncode == 0, out.stderr
    assert "reward null" in out.stderr
    groups = {row["task_id"]: row for row in _load(rl, tmp_path / "cache2")}
    free_group = groups[None]  # task-less runs of one request form one group
    assert free_group["size"] == 2 and free_group["success_rate"] is None
    assert [r["reward"] for r in free_group["rollouts"]] == [None, None]
    assert all(r["verified"] is False and r["success"] is None for r in free_group["rollouts"])
    (judged,) = [g for tid, g in groups.items() if tid is not None]
    assert judged["rollouts"][0]["reward"] == 1.0 and judged["rollouts"][0]["verified"] is True


@pytest.mark.parametrize("kind", ["sft", "rl"])
def test_require_verdict_refuses_in_one_line_and_writes_nothing(traces, tmp_path, kind):
    target = tmp_path / f"{kind}.jsonl"
    files = [str(p) for p in traces["free"] + traces["judged"]]
    out = cli("export", kind, *files, "-o", str(target), "--require-verdict")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: 2 of 3 trace(s) have no verdict (free runs, no task): --require-verdict refuses them"
    ]
    assert not target.exists()
    extra = ["--min-size", "1"] if kind == "rl" else []
    ok = cli("export", kind, *map(str, traces["judged"]), "-o", str(target), "--require-verdict", *extra)
    assert ok.returncode == 0 and not ok.stderr.strip() and target.exists()


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_an_empty_export_is_refused_and_no_file_is_written(traces, tmp_path, suffix):
    # the refused file really is one load_dataset cannot open (so refusing is the right call)
    datasets = pytest.importorskip("datasets")
    for kind in ("sft", "rl"):
        path = tmp_path / f"empty-{kind}{suffix}"
        with pytest.raises(EmptyExportError, match="nothing to export"):
            write_rows([], path, kind)
        assert not path.exists() and not list(tmp_path.glob(f".empty-{kind}*"))  # no temp file either
    probe = tmp_path / f"probe{suffix}"
    if suffix == ".jsonl":
        probe.write_text("")
    else:  # even a Parquet file that carries the export's schema, with no row
        import pyarrow as pa
        import pyarrow.parquet as pq

        from pocketpilot.trainer_bridge.export_io import arrow_schema

        pq.write_table(pa.Table.from_pylist([], schema=arrow_schema("sft")), probe)
    with pytest.raises(Exception):  # noqa: B017 - whatever datasets raises for it
        datasets.load_dataset("json" if suffix == ".jsonl" else "parquet", data_files=str(probe), split="train",
                              cache_dir=str(tmp_path / "cache"))
    # an earlier export under that name is left as it was
    keep = tmp_path / f"keep{suffix}"
    out = cli("export", "rl", *map(str, traces["free"]), "-o", str(keep), "--min-size", "1")
    assert out.returncode == 0, out.stderr
    before = keep.read_bytes()
    out = cli("export", "rl", *map(str, traces["free"]), "-o", str(keep), "--min-size", "3")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("note: 2 of 2")  # the verdict note, then the refusal
    assert "nothing to export: 2 trace(s) formed no group of at least --min-size 3; no file written" in lines[1]
    assert keep.read_bytes() == before
    assert _load(keep, tmp_path / "cache3").num_rows == 1
