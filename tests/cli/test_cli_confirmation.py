"""The CLI's confirmation: a prompt naming the effect on a terminal, a stated denial without one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from click.testing import CliRunner

import pocketpilot.cli.run as run_module
from pocketpilot.cli.main import cli
from pocketpilot.contracts import ToolCall, ToolSpec

POWER_OFF = ToolSpec(name="power_off", effect="update", destructive=True)
SEND = ToolSpec(name="tap_element", effect="send", destructive=True)


def _ask(policy: Any, call: ToolCall, spec: ToolSpec, answer: str) -> tuple[bool, str]:
    with CliRunner().isolation(input=answer) as (_out, err, _both):
        allowed = asyncio.run(policy(call, spec))
        return allowed, err.getvalue().decode()


def test_on_a_terminal_the_user_is_asked_what_the_call_is() -> None:
    policy = run_module._confirmation(False, tty=True)
    allowed, prompt = _ask(policy, ToolCall(name="power_off"), POWER_OFF, "y\n")
    assert allowed and "power_off is destructive: allow? [y/N]" in prompt
    allowed, prompt = _ask(policy, ToolCall(name="tap_element", arguments={"text": "Send"}), SEND, "\n")
    assert not allowed and "tap_element is send: allow? [y/N]" in prompt  # the default is no
    assert "text='Send'" in prompt  # the call itself is shown before the question


def test_without_a_terminal_the_call_is_denied_and_named_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    policy = run_module._confirmation(False, tty=False)
    assert not asyncio.run(policy(ToolCall(name="send_sms", arguments={"to": "+1555", "body": "hi"}),
                                  ToolSpec(name="send_sms", effect="send", destructive=True)))
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "send_sms(to='+1555', body='hi')" in err[0] and "is send" in err[0]
    assert asyncio.run(run_module._confirmation(True)(ToolCall(name="power_off"), POWER_OFF))  # --yes


def test_the_demo_asks_instead_of_allowing_all(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    class Planner:
        info = type("Info", (), {"backend": "fake", "model": "fake"})()

        async def load(self) -> None:  # the demo loads the model while the embedder is built
            return None

        async def aclose(self) -> None:
            return None

    async def fake_run_task_episode(task: Any, planner: Any, **kw: Any) -> Any:
        seen["task"], seen["confirm"] = task.id, kw["confirm"]
        raise SystemExit(0)

    monkeypatch.setattr(run_module, "build_planner", lambda *a, **k: Planner())
    monkeypatch.setattr(run_module, "run_task_episode", fake_run_task_episode)
    CliRunner().invoke(cli, ["demo"])
    assert seen["task"] == run_module.DEMO_TASK
    assert not asyncio.run(seen["confirm"](ToolCall(name="power_off"), POWER_OFF))  # no terminal here: denied


def test_the_demo_allows_the_power_off_only_with_yes(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    class Planner:
        info = type("Info", (), {"backend": "fake", "model": "fake"})()

        async def load(self) -> None:
            return None

        async def aclose(self) -> None:
            return None

    async def fake_run_task_episode(task: Any, planner: Any, **kw: Any) -> Any:
        seen.append(kw["confirm"])
        raise SystemExit(0)

    monkeypatch.setattr(run_module, "build_planner", lambda *a, **k: Planner())
    monkeypatch.setattr(run_module, "run_task_episode", fake_run_task_episode)
    CliRunner().invoke(cli, ["demo", "--yes"])
    CliRunner().invoke(cli, ["demo"])
    allowed, asked = (asyncio.run(policy(ToolCall(name="power_off"), POWER_OFF)) for policy in seen)
    assert allowed and not asked
