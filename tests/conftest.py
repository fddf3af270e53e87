"""Shared fixtures: the test planner model (pulled by `make test`) and helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pocketpilot.model_store import ModelStore

from leftovers import kill, mark_environment, wait_for_leftovers

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


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RUN] = mark_environment()


_RUN = pytest.StashKey[str]()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a test left a process running (an adb server, a llama server, a phone)."""
    if not Path("/proc").is_dir():
        return
    left = wait_for_leftovers(session.config.stash[_RUN], grace_s=10)
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"{len(left)} process(es) started by this test run are still running:"]
    lines += [f"  pid {pid}: {cmd[:200]}" for pid, cmd in left]
    for line in lines:
        if reporter is not None:
            reporter.write_line(line, red=True, bold=True)
        else:
            print(line)
    kill(left)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
