"""bench/bench_memo_reruns.py: a rerun of identical tasks decodes nothing; run as before issue 36's fix, it does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_scripts import bench_script  # noqa: E402


def _searching_kit():  # noqa: ANN202
    """The bundled kit with memory_search offered after a whole recall.

    By default (``MemorySettings.defaults()``) the search is withheld once the owner's whole
    history went in, as the suite's memory histories all do: no memory id would reach a prompt.
    """
    from pocketpilot.adapters.placement import MemorySettings
    from pocketpilot.evaluation.task_episode import HarnessKit, load_harness_kit

    kit = load_harness_kit()
    searching = MemorySettings.defaults().model_copy(update={"whole_closes_search": False})
    return HarnessKit(kit.library, eta=kit.eta.model_copy(update={"memory": searching}))


@pytest.mark.parametrize("unseeded", [False, True])
def test_the_rerun_figure(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, unseeded: bool) -> None:
    with bench_script("bench_memo_reruns") as bench:
        monkeypatch.setattr(bench, "load_harness_kit", _searching_kit)
        assert bench.main(["--sample", "12", *(["--unseeded"] if unseeded else [])]) == 0
    rows = {line.split()[0]: line.split()[1:3] for line in capsys.readouterr().out.splitlines()[1:]}
    steps, decoded = (int(v) for v in rows["total"])
    assert steps > 0 and {"memory", "subagent"} <= set(rows)
    if unseeded:  # the steps after a memory search or a delegation read a fresh id
        assert int(rows["memory"][1]) > 0 and int(rows["subagent"][1]) > 0
    else:
        assert decoded == 0
