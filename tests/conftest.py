"""Shared fixtures: the test planner model (pulled by `make test`) and helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pocketpilot.model_store import ModelStore

TEST_MODEL = os.environ.get("POCKETPILOT_TEST_MODEL", "qwen2.5-coder-0.5b")


@pytest.fixture(scope="session")
def test_gguf() -> Path:
    """The small planner the model tests run on; `make test` installs it before pytest starts."""
    store = ModelStore()
    entry = store.lookup(TEST_MODEL)
    if not store.is_installed(entry):
        if os.environ.get("CI"):
            pytest.fail(f"{entry.name} is not installed: `make test` pulls it before running pytest")
        store.pull(entry.name)
    return store.path_for(entry)
