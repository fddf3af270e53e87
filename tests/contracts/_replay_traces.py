"""Real traces for the HTML replay: scripted-planner runs of suite tasks on the sandbox phone,
verified by the tasks' own verifiers (no model needed)."""

from __future__ import annotations

from pathlib import Path

from scripted_actions import entry

from pocketpilot.evaluation.compare import device_clock, load_harness_kit, run_task
from pocketpilot.harness import AllowAll, Session
from pocketpilot.harness.planners import ScriptedPlanner
from pocketpilot.tasks import load_suite, prepare

HOSTILE = (
    "Level 3, bay 42 <script>document.title='PWNED';"
    "document.body.appendChild(document.createElement('div')).id='injected'</script>"
    '<img src="x" onerror="document.title=\'PWNED\'">'
)


def _task(task_id: str):
    return next(t for t in load_suite() if t.id == task_id)


async def hostile_trace(trace_dir: Path) -> Path:
    """A parking note whose body is an XSS payload, saved and powered off in one batch: the gate
    holds power_off until the note exists, the harness runs it next; then the note is read back,
    so the payload comes back as a tool result."""
    task = _task("ordering-parking-note-then-off")
    planner = ScriptedPlanner(
        [
            {"kind": "tool_call", "calls": [entry("create_note", title="Parking", body=HOSTILE), entry("power_off")]},
            {"kind": "tool_call", "calls": [entry("read_note", note_id="note-4")]},
            {"kind": "tool_call", "calls": [entry("power_off")]},
            {"kind": "finish", "summary": "Saved the parking note, then powered off. " + HOSTILE},
        ]
    )
    episode, _ = await run_task(task, planner, trace_dir=trace_dir)
    return trace_dir / f"{episode.header.episode_id}.jsonl"


async def recall_trace(trace_dir: Path) -> Path:
    """'Cast my screen to my usual TV': a memory search with provenance, a status check, a wrong
    guess that fails, the recovery and a verified finish."""
    task = _task("mem-recall-usual-tv")
    planner = ScriptedPlanner(
        [
            {"kind": "memory_search", "query": "usual TV cast"},
            {"kind": "tool_call", "calls": [entry("get_cast_status")]},
            {"kind": "tool_call", "calls": [entry("start_cast", target="Bedroom Tv set")]},
            {"kind": "tool_call", "calls": [entry("start_cast", target="Bedroom TV")]},
            {"kind": "finish", "summary": "Casting to the Bedroom TV, your usual one."},
        ]
    )
    # the task's own seeded memory store, searched by the planner (run_task would recall for it)
    run = prepare(task, memory=True)
    try:
        assert run.memory is not None
        kw = load_harness_kit().session_kwargs([t.name for t in run.executor.tools()], request=task.goal,
                                               recalled=[], memory_search=True)
        session = Session(planner, run.executor, memory=run.memory.bound, confirm=AllowAll(),
                          evidence=[device_clock(run.phone.state.now)], verifier=run.verifier,
                          trace_dir=trace_dir, task_id=task.id, **kw)
        await session.run(task.goal)
    finally:
        run.close()
    assert session.trace_path is not None
    return session.trace_path
