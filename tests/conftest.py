"""Shared fixtures: the test planner model (pulled by `make test`) and helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from leftovers import MARK, kill, mark_environment, wait_for_leftovers

from pocketpilot.models.store import ModelStore

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
    if hasattr(config, "workerinput"):
        # an xdist worker: a marker of its own (its children inherit it), checked by itself below,
        # since the controller and the other workers carry the run's marker too
        os.environ.pop(MARK, None)
    config.stash[_RUN] = mark_environment()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that loads the test planner model is marked ``model`` (``-m "not model"`` leaves it out)."""
    for item in items:
        if "test_gguf" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.model)


def _parallel(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


@pytest.fixture(scope="session", autouse=True)
def _no_leftovers_in_this_worker(request: pytest.FixtureRequest):
    """Under xdist each worker checks what its own tests left (after every other session fixture's teardown)."""
    yield
    if not hasattr(request.config, "workerinput") or not Path("/proc").is_dir():
        return
    left = wait_for_leftovers(request.config.stash[_RUN], grace_s=10)
    if left:
        kill(left)
        pytest.fail(f"{len(left)} process(es) started by this test run are still running: "
                    + "; ".join(f"pid {pid}: {cmd[:200]}" for pid, cmd in left))


_RUN = pytest.StashKey[str]()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a test left a process running (an adb server, a llama server, a phone)."""
    if not Path("/proc").is_dir() or _parallel(session.config) or hasattr(session.config, "workerinput"):
        return  # under xdist the workers check (their processes carry the run's marker)
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
