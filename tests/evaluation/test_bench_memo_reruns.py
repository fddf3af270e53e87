"""bench/bench_memo_reruns.py: a rerun of identical tasks decodes nothing; run as before issue 36's fix, it does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_scripts import bench_script  # noqa: E402


@pytest.mark.parametrize("unseeded", [False, True])
def test_the_rerun_figure(capsys: pytest.CaptureFixture[str], unseeded: bool) -> None:
    with bench_script("bench_memo_reruns") as bench:
        assert bench.main(["--sample", "12", *(["--unseeded"] if unseeded else [])]) == 0
    rows = {line.split()[0]: line.split()[1:3] for line in capsys.readouterr().out.splitlines()[1:]}
    steps, decoded = (int(v) for v in rows["total"])
    assert steps > 0 and {"memory", "subagent"} <= set(rows)
    if unseeded:  # the steps after a memory search or a delegation read a fresh id
        assert int(rows["memory"][1]) > 0 and int(rows["subagent"][1]) > 0
    else:
        assert decoded == 0
