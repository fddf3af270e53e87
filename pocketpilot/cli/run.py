"""`pocketpilot run` and `pocketpilot demo`: one request through the harness, printed as it goes."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..contracts import Episode, Step, ToolCall, ToolSpec
from ..errors import UsageError
from ..evaluation.task_episode import Mode, RunSettings, device_clock, load_harness_kit, run_task_episode
from ..executor.sandbox import EVERYDAY_APPS, SandboxExecutor, SandboxPhone
from ..harness import (
    AllowAll,
    CallbackConfirmation,
    Confirmer,
    ContextBudget,
    DenyAll,
    Executor,
    HarnessConfig,
    Planner,
    Session,
    safety_policies,
)
from ..harness.observer import RunObserver
from ..models.store import pocketpilot_home
from ..tasks import TaskSpec, load_task
from ..tasks.loader import bundled_task
from ._embedder import default_embedder
from ._exposure import check_exposure, exposure_options
from ._mcp import McpServer, mcp_options, mcp_servers, serving
from ._planner import budget_overrides, build_planner, planner_options
from ._telemetry import otel_option, start_telemetry
from .render import render_step, render_verdict

__all__ = ["DEMO_TASK", "demo", "run"]

DEMO_TASK = "ordering-parking-note-then-off"
"""The demo: a multi-step request with an order the verifier checks (note saved before power off)."""


_BROKEN = ("planner_error", "device_lost")
"""Stop reasons that mean the backend broke (exit status 1), not that the episode concluded."""


def _call_text(call: ToolCall) -> str:
    return f"{call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())})"


class _DenyWithoutTty(DenyAll):
    """No terminal to ask: deny, and say so on stderr (the run stops there, as on a "no")."""

    reason = "no terminal to ask (use --yes to allow)"

    async def __call__(self, call: ToolCall, spec: ToolSpec) -> bool:
        click.echo(f"denied {_call_text(call)}: {call.name} is {spec.effect_label()} and there is no terminal "
                   "to ask (use --yes to allow)", err=True)
        return False


def _confirmation(yes: bool, *, tty: bool | None = None) -> Confirmer:
    """``--yes`` allows; on a terminal the user is asked per call; otherwise the call is denied."""
    if yes:
        return AllowAll()
    if sys.stdin.isatty() if tty is None else tty:
        one_at_a_time = threading.Lock()  # calls of one batch ask concurrently, from worker threads

        def ask(call: ToolCall, spec: ToolSpec) -> bool:
            with one_at_a_time:
                click.echo(f"  {_call_text(call)}", err=True)
                return click.confirm(f"{call.name} is {spec.effect_label()}: allow?", default=False, err=True)

        return CallbackConfirmation(ask)
    return _DenyWithoutTty()


def _report(episode: Episode, trace: str | Path | None) -> None:
    click.echo(f"\nstopped: {episode.stop_reason} — {episode.stop_detail}")
    usage = episode.usage()
    click.echo(
        f"{len(episode.steps)} steps, {usage['prompt_tokens_evaluated']} prompt tokens evaluated, "
        f"{usage['completion_tokens']} generated"
    )
    click.echo(render_verdict(episode.verdict))
    if trace:
        click.echo(f"trace: {trace}")
    if episode.stop_reason in _BROKEN:
        # the run did not end on the planner's decision: scripts and CI must not read it as done
        click.echo(f"error: {episode.stop_reason}: {episode.stop_detail}", err=True)
        sys.exit(1)


def _show(step: Step) -> None:
    click.echo(render_step(step))


def _execute(request: str | None, task: TaskSpec | None, planner: Planner,
             yes: bool, max_steps: int | None, trace_dir: Path, device: Executor | None = None,
             observer: RunObserver | None = None, servers: Sequence[McpServer] = (),
             apps: Sequence[str] | None = None, guidance: Sequence[str] | None = None,
             mode: Mode = "harness", exposure: str = "task", tool_k: int | None = None) -> None:
    """Run in ``mode``: the full harness (skills and their gates, η guidance, for tasks seeded
    memory), or the bare planner (as ``bench --no-harness``: no skills, routing, guidance or gates).

    ``guidance``: the ``--guidance-file`` documents (None: none given). A task's own policy gives
    way to them; a REQUEST run adds them to the adapter's guidance.
    """
    kit = load_harness_kit()
    overrides = budget_overrides()
    if task is not None and device is None:
        if request:
            task = task.model_copy(update={"goal": request})
        click.echo(f"task {task.id} [{task.group}/{task.capability}]: {task.goal}" + (" (bare)" if mode == "bare" else ""))
        click.echo(f"planner: {planner.info.backend} {planner.info.model} (first step loads the model)\n")
        settings = RunSettings(guidance=None if guidance is None else tuple(guidance), budget=overrides,
                               max_steps=max_steps, exposure=exposure, tool_k=tool_k)
        chosen = task

        async def go() -> None:
            # the model loads while the memory embedder is built: two threads, mostly in C
            loading = asyncio.ensure_future(planner.load())
            try:
                # the task's memory store searches hybrid (the embedder is built once, first run)
                embedder = await asyncio.to_thread(default_embedder)
                await loading
                episode, trace = await run_task_episode(chosen, planner, mode=mode, trace_dir=trace_dir,
                                                        settings=settings, kit=kit, on_step=_show,
                                                        embedder=embedder, confirm=_confirmation(yes),
                                                        observer=observer)
            finally:
                await asyncio.wait({loading})  # never close a model that is still loading
                await planner.aclose()
            _report(episode, trace)

        asyncio.run(go())
        return
    if not request:
        raise UsageError("give a REQUEST, --task FILE or --task-id ID")
    extra: dict[str, Any]
    if device is not None:
        # A device exposes other tools and no sandbox state to verify: the gates of the skills
        # written for its tools' declared world still apply.
        executor: Executor = device
        extra = {"gates": kit.gates_for(device.tools()),
                 "policies": kit.eta.build_policies() if kit.eta is not None else None}
    else:
        phone = SandboxPhone()
        executor = SandboxExecutor(phone, list(apps) if apps else list(EVERYDAY_APPS))
        # Routed like a bench request: the skills it needs in the first context, no memory actions.
        extra = kit.session_kwargs(executor.tools(), memory=False, request=request,
                                   memory_search=False)
        extra["evidence"] = [device_clock(phone.state.now)]
    if mode == "bare":  # the planner alone, as the bench's bare mode: confirmation is all that guards it
        extra = {"policies": safety_policies()}
    click.echo(f"request: {request}" + (" (bare)" if mode == "bare" else ""))
    if guidance:  # the user's own documents, ahead of the adapter's routed notes
        extra["guidance"] = [*guidance, *extra.get("guidance", [])]
    click.echo(f"planner: {planner.info.backend} {planner.info.model} (first step loads the model)\n")

    async def go_free() -> None:
        try:
            async with serving(executor, servers) as run_executor:  # MCP servers stop with the run
                session = Session(
                    planner,
                    run_executor,
                    config=HarnessConfig(max_steps=max_steps or 15, budget=ContextBudget(**overrides)),
                    confirm=_confirmation(yes),
                    trace_dir=trace_dir,
                    on_step=_show,
                    observer=observer,
                    **extra,
                )
                episode = await session.run(request)
        finally:
            await planner.aclose()
            closer = getattr(executor, "aclose", None)
            if closer is not None:
                await closer()  # stops the device-side uiautomator2 server
        _report(episode, session.trace_path)

    asyncio.run(go_free())


def _suite_task(task_id: str) -> TaskSpec:
    task = bundled_task(task_id)
    if task is None:
        raise UsageError(f"no bundled task {task_id!r}")
    return task


def _load(task_file: str | None, task_id: str | None, device: str | None,
          servers: Sequence[McpServer], apps: str | None = None) -> TaskSpec | None:
    """The task to run, loaded and checked (its world built once) before any planner loads.

    A file from anywhere works: its folder is on sys.path while its world's modules import.

    Raises:
        UsageError: a flag that would be ignored with a task (``--device``, ``--apps``, ``--mcp``).
    """
    if not (task_file or task_id):
        return None
    if task_file and task_id:
        raise UsageError("give --task FILE or --task-id ID, not both")
    if device:
        raise UsageError("--device runs a REQUEST on a device; a task runs on its own world")
    if apps:
        raise UsageError("--apps picks a REQUEST's sandbox apps; a task names its own tools")
    if servers:
        raise UsageError("--mcp/--mcp-url add tools to a REQUEST run; a --task brings its own world")
    return load_task(task_file) if task_file else _suite_task(task_id or "")


@click.command("run")
@click.argument("request", required=False)
@click.option("--task", "task_file", type=click.Path(dir_okay=False),
              help="Run a task file from anywhere (goal, world, verifier); its folder may hold the world's modules.")
@click.option("--task-id", help="Run a bundled task by id.")
@click.option("--yes", is_flag=True, help="Allow destructive tools without asking.")
@click.option("--max-steps", type=int, default=None)
@click.option("--trace-dir", type=click.Path(file_okay=False), default=None,
              help="Where the JSONL trace goes (default: the pocketpilot cache).")
@click.option("--device", default=None, help="Run on an adb device (serial or host:port) instead of the sandbox.")
@click.option("--adb-port", type=int, default=None, help="adb server port (default: $ANDROID_ADB_SERVER_PORT or 5037).")
@click.option("--apps", "apps", default=None,
              help="Sandbox apps (or tools) a REQUEST may use, comma-separated (default: the everyday apps; "
                   "`pocketpilot sandbox apps` lists them all).")
@click.option("--guidance-file", "guidance_files", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A document (an operating policy), repeatable: added ahead of a REQUEST run's routed "
                   "guidance; for a task it replaces the task's own policy. A long one needs --budget "
                   "guidance=N and a larger --n-ctx.")
@click.option("--mode", type=click.Choice(["harness", "bare"]), default="harness", show_default=True,
              help="bare: the planner alone, as `bench --no-harness` (no skills, retrieval, adapter guidance "
                   "or gates; a task's memories as earlier conversation).")
@mcp_options
@otel_option
@exposure_options
@planner_options
def run(request: str | None, task_file: str | None, task_id: str | None, yes: bool, max_steps: int | None,
        trace_dir: str | None, device: str | None, adb_port: int | None, model: str, endpoint: str | None,
        temperature: float, max_new_tokens: int, pull: bool, otel: str | None = None,
        mcp_commands: Sequence[str] = (), mcp_urls: Sequence[str] = (), apps: str | None = None,
        guidance_files: Sequence[str] = (), mode: Mode = "harness", exposure: str = "task",
        tool_k: int | None = None) -> None:
    """Run REQUEST on the sandbox phone, a task with its verifier, or a device (--device)."""
    exposure, tool_k = check_exposure(exposure, tool_k)
    if (exposure != "task" or tool_k is not None) and not (task_file or task_id):
        raise UsageError("--exposure and --tool-k apply to a task run (--task or --task-id)")
    observer = start_telemetry(otel)  # bad flags fail before a device or the model is touched
    servers = mcp_servers(mcp_commands, mcp_urls)
    if adb_port is not None and not device:
        raise UsageError("--adb-port needs --device")
    task = _load(task_file, task_id, device, servers, apps)  # a bad task file fails before the model loads
    budget_overrides()  # a bad --budget fails before the model loads too
    chosen = [a.strip() for a in apps.split(",") if a.strip()] if apps else None
    if chosen is not None:
        SandboxExecutor(SandboxPhone(), chosen)  # an unknown app fails now, before the model loads
    device_executor = None
    if device:
        from .devices import build_device_executor

        device_executor, _ = build_device_executor(device, adb_port)  # a bad serial fails before the model loads
        click.echo(f"device: {device}")
    guidance = [Path(f).read_text(encoding="utf-8") for f in guidance_files] if guidance_files else None
    planner = build_planner(model, endpoint, temperature, max_new_tokens, pull, n_ctx=task.n_ctx if task else None)
    _execute(request, task, planner, yes, max_steps, Path(trace_dir or pocketpilot_home() / "traces"),
             device_executor, observer, servers, apps=chosen, guidance=guidance, mode=mode,
             exposure=exposure, tool_k=tool_k)


@click.command("demo")
@click.option("--trace-dir", type=click.Path(file_okay=False), default=None)
@click.option("--yes", is_flag=True, help="Allow the power-off without asking (without a terminal it is denied).")
@planner_options
def demo(trace_dir: str | None, yes: bool, model: str, endpoint: str | None, temperature: float,
         max_new_tokens: int, pull: bool) -> None:
    """The embedded default: the bundled planner runs a multi-step task on the sandbox phone."""
    task = _suite_task(DEMO_TASK)
    planner = build_planner(model, endpoint, temperature, max_new_tokens, pull)
    # asks before power off like any run: on a terminal the user answers, without one it is denied
    _execute(None, task, planner, yes, None, Path(trace_dir or pocketpilot_home() / "traces"))
