"""The CLI through a subprocess, as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest

from pocketpilot.harness import Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, oracle_actions, prepare
from pocketpilot.tracing.trace import read_trace


def cli(*args: str, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pocketpilot", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_help_and_models_list():
    out = cli("--help")
    assert out.returncode == 0 and "demo" in out.stdout and "bench" in out.stdout
    listed = cli("models", "list")
    assert listed.returncode == 0
    assert "* qwen2.5-coder-1.5b-instruct-q4_k_m" in listed.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "--model", "gpt-17", "hello"), "unknown model 'gpt-17'"),
        (("run", "--model", "/nonexistent/m.gguf", "hello"), "no such GGUF file"),
        (("models", "pull", "gpt-17"), "unknown model"),
        (("trace", "show", "/nonexistent.jsonl"), "cannot read trace"),
        (("bench", "--task-id", "no-such-task", "--no-pull"), "unknown task ids"),
    ],
)
def test_user_errors_are_one_line(args, message):
    out = cli(*args)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_invalid_task_file(tmp_path):
    bad = tmp_path / "task.yaml"
    bad.write_text("id: x\ngoal: do it\ntools: [teleporter]\ncriteria: []\n")
    fake = tmp_path / "m.gguf"
    fake.write_bytes(b"GGUF" + b"\0" * 16)
    out = cli("run", "--task", str(bad), "--model", str(fake))
    assert out.returncode == 2 and "invalid task" in out.stderr and "Traceback" not in out.stderr


async def test_trace_show_renders_steps_and_verdict(tmp_path):
    task = next(t for t in load_suite() if t.id == "settings-wifi-off")
    run = prepare(task)
    session = Session(ScriptedPlanner(oracle_actions(task)), run.executor, verifier=run.verifier, trace_dir=tmp_path)
    await session.run(task.goal)
    out = cli("trace", "show", str(session.trace_path))
    assert out.returncode == 0, out.stderr
    assert "step 1: tool_call" in out.stdout and "set_wifi(enabled=false)" in out.stdout
    assert "verdict: SUCCESS" in out.stdout
    as_openai = cli("trace", "show", "--openai", str(session.trace_path))
    chat = json.loads(as_openai.stdout)
    messages = chat["messages"]
    assert [m["role"] for m in messages[:2]] == ["system", "user"] and messages[2]["tool_calls"]
    assert "set_wifi" in {t["function"]["name"] for t in chat["tools"]}


@pytest.mark.slow
def test_real_run_prints_steps_results_and_verdict(test_gguf, tmp_path):
    out = cli("run", "--task-id", "settings-wifi-off", "--model", str(test_gguf), "--trace-dir", str(tmp_path),
              timeout=300)
    assert out.returncode == 0, out.stderr
    assert "step 1:" in out.stdout and "verdict:" in out.stdout
    traces = list(tmp_path.glob("*.jsonl"))
    assert len(traces) == 1
    episode, complete = read_trace(traces[0])
    assert complete and episode.verdict is not None and episode.steps


@pytest.mark.slow
def test_ctrl_c_mid_episode_keeps_the_trace(test_gguf, tmp_path):
    """SIGINT while the planner is generating (the cold first step takes seconds): the worker
    thread stops, the trace gets its end record, and the CLI exits 130 without a traceback.

    The signal goes as soon as the trace header exists (written once the model is loaded,
    right before the first step). A warm short episode can still end before the signal lands
    (seen in full-suite runs): such an attempt, whose trace ended before the signal was sent,
    is not evidence either way and is retried. A run that ended *after* the signal fails.
    """
    for attempt in range(3):
        trace_dir = tmp_path / f"attempt-{attempt}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "pocketpilot", "run", "--model", str(test_gguf), "--trace-dir", str(trace_dir),
             "Check every setting one by one, then report them all."],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            # a job started in the background by a shell without job control inherits SIGINT
            # ignored, and Python then installs no KeyboardInterrupt handler: give the child
            # the default disposition, as a terminal would
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            deadline = time.monotonic() + 240
            while not (trace_dir.is_dir() and list(trace_dir.glob("*.jsonl"))):
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "the run never started its trace"
                time.sleep(0.01)
            sent = datetime.now(UTC)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        (trace,) = trace_dir.glob("*.jsonl")
        episode, complete = read_trace(trace)
        if proc.returncode == 0 and complete and episode.ended_at is not None and episode.ended_at < sent:
            continue  # the episode was over before the signal: retry
        assert proc.returncode == 130, err
        assert "interrupted" in err and "Traceback" not in err
        assert complete and episode.stop_reason == "cancelled"
        return
    pytest.fail("three runs each ended before the signal could be sent")


def test_a_command_imports_only_its_own_module_and_help_still_lists_every_command() -> None:
    import subprocess
    import sys

    from click.testing import CliRunner

    from pocketpilot.cli.main import COMMANDS, cli

    probe = (
        "import sys\n"
        "from pocketpilot.cli.main import main\n"
        "try:\n    main(['cache', 'info'])\n"
        "finally:\n    print(sorted(m for m in sys.modules if m.startswith('pocketpilot.cli.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    loaded = out.stdout.strip().splitlines()[-1]
    assert "pocketpilot.cli.cache" in loaded
    assert "pocketpilot.cli.bench" not in loaded and "pocketpilot.cli.devices" not in loaded
    shown = CliRunner().invoke(cli, ["--help"])
    assert shown.exit_code == 0
    assert all(f"\n  {name} " in shown.output for name in COMMANDS)
    unknown = CliRunner().invoke(cli, ["no-such-command"])
    assert unknown.exit_code == 2 and "No such command" in unknown.output
