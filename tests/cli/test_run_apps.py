"""`pocketpilot run REQUEST --apps`: which sandbox apps a free request may use."""

from __future__ import annotations

from pathlib import Path

import pytest

from pocketpilot.cli import run as run_module
from pocketpilot.cli.main import main
from pocketpilot.executor.sandbox import EVERYDAY_APPS, SandboxPhone
from pocketpilot.harness.planners.scripted import ScriptedPlanner
from pocketpilot.tracing.trace import read_trace


def _run(monkeypatch: pytest.MonkeyPatch, planner: ScriptedPlanner, *args: str) -> int:
    monkeypatch.setattr(run_module, "build_planner", lambda *a, **k: planner)
    try:
        main(["run", *args])
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _tools(tmp_path: Path) -> list[str]:
    (trace,) = tmp_path.glob("*.jsonl")
    episode, _ = read_trace(trace)
    return [t.name for t in episode.header.tools]


def test_a_free_request_sees_the_everyday_apps_by_default(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    code = _run(monkeypatch, ScriptedPlanner([{"kind": "finish", "summary": "ok"}]), "--trace-dir", str(tmp_path), "hi")
    assert code == 0, capsys.readouterr().err
    phone = SandboxPhone()
    assert _tools(tmp_path) == [t for app in EVERYDAY_APPS for t in phone.tool_names(app)]


def test_apps_picks_the_sandbox_apps(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    planner = ScriptedPlanner([{"kind": "tool_call", "calls": [{"name": "list_cards", "arguments": {}}]},
                               {"kind": "finish", "summary": "three cards"}])
    code = _run(monkeypatch, planner, "--apps", "wallet, set_wifi", "--trace-dir", str(tmp_path), "what cards?")
    assert code == 0, capsys.readouterr().err
    assert _tools(tmp_path) == [*SandboxPhone().tool_names("wallet"), "set_wifi"]


def test_an_unknown_app_is_one_line_before_the_planner(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_planner(*a: object, **k: object) -> None:
        raise AssertionError("the planner must not be built")

    monkeypatch.setattr(run_module, "build_planner", no_planner)
    with pytest.raises(SystemExit) as exc:
        main(["run", "--apps", "radio", "play the radio"])
    assert exc.value.code == 2
    assert "unknown sandbox tool(s) 'radio'" in capsys.readouterr().err
