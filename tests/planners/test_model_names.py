"""LlamaCppPlanner takes what the CLI's --model takes: a catalogue name, or a path with ``~``."""

from __future__ import annotations

import json

import pytest

from pocketpilot.errors import ModelIntegrityError, ModelNotInstalledError, UnknownModelError
from pocketpilot.harness.planners import LlamaCppPlanner
from pocketpilot.models.store import CatalogueModel, ModelStore

TINY = CatalogueModel(name="tiny-q4", description="test", packages=(), members=(), sha256="ab" * 32, size=None,
                      quant_type="Q4_K_M", aliases=("tiny",))


def installed_store(tmp_path) -> ModelStore:
    store = ModelStore(root=tmp_path, catalogue={TINY.name: TINY})
    path = store.path_for(TINY)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"GGUF" + b"\0" * 60)
    st = path.stat()
    path.with_suffix(".verified.json").write_text(
        json.dumps({"sha256": TINY.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    return store


def test_catalogue_names_and_aliases_resolve_through_the_store(tmp_path):
    store = installed_store(tmp_path)
    for name in ("tiny", "tiny-q4", "TINY"):
        planner = LlamaCppPlanner(name, model_store=store)
        assert planner.model_path == store.path_for(TINY)
        assert planner.info.model_sha256 == TINY.sha256 and planner.info.quant_type == "Q4_K_M"


def test_an_explicit_sha_wins_over_the_catalogue(tmp_path):
    planner = LlamaCppPlanner("tiny", model_store=installed_store(tmp_path), sha256="cd" * 32)
    assert planner.info.model_sha256 == "cd" * 32


def test_home_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.gguf").write_bytes(b"GGUF" + b"\0" * 60)
    planner = LlamaCppPlanner("~/models/m.gguf")
    assert planner.model_path == tmp_path / "models" / "m.gguf"
    with pytest.raises(ModelIntegrityError, match="no such GGUF file"):
        LlamaCppPlanner("~/models/other.gguf")


def test_names_that_are_not_there_say_what_to_do(tmp_path):
    empty = ModelStore(root=tmp_path, catalogue={TINY.name: TINY})
    with pytest.raises(ModelNotInstalledError, match="pocketpilot models pull tiny-q4"):
        LlamaCppPlanner("tiny", model_store=empty)
    with pytest.raises(UnknownModelError, match="unknown model 'gpt-17'"):
        LlamaCppPlanner("gpt-17", model_store=empty)
