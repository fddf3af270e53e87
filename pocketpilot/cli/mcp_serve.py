"""`pocketpilot mcp serve`: a phone's tools and the agent as an MCP server (stdio or streamable HTTP).

Over stdio the protocol owns stdout: everything this command says goes to stderr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ..errors import UsageError
from ..models.store import pocketpilot_home
from ._errors import ErrorMappingGroup
from ._planner import build_planner, planner_options

__all__ = ["mcp"]

mcp = ErrorMappingGroup("mcp", help="pocketpilot as an MCP server.")


def scripted(path: str) -> Any:
    """A planner replaying the JSON list of actions in ``path``."""
    from ..harness.planners import ScriptedPlanner

    try:
        actions = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"--script {path}: not a JSON list of actions ({exc})") from exc
    if not isinstance(actions, list):
        raise UsageError(f"--script {path}: not a JSON list of actions")
    return ScriptedPlanner(actions, name=f"script:{Path(path).name}")


@mcp.command("serve")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP address (loopback unless --insecure-lan).")
@click.option("--port", type=click.IntRange(0, 65535), default=8766, show_default=True)
@click.option("--insecure-lan", is_flag=True, help="Serve HTTP on a non-loopback address (no TLS: the token in clear).")
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="HTTP: the bearer token every request must carry (default: `pocketpilot serve`'s, "
                   "generated at the first start).")
@click.option("--device", default="sandbox", show_default=True,
              help="`sandbox`, or an adb serial (a phone, or the simulated one).")
@click.option("--apps", default=None, help="Sandbox apps or tools to expose, comma-separated (default: everyday apps).")
@click.option("--eta", type=click.Choice(["default", "none"]), default="default", show_default=True,
              help="default: the harness's skills, gates and policies; none: gates and confirmation only.")
@click.option("--trace-dir", type=click.Path(file_okay=False), default=None,
              help="Where every run is recorded, direct calls included (default: the pocketpilot cache).")
@click.option("--max-steps", type=click.IntRange(min=1), default=15, show_default=True)
@click.option("--confirm-timeout", type=click.FloatRange(min=0.1), default=120.0, show_default=True,
              help="Seconds a run waits for the answer to a confirmation before it is denied.")
@click.option("--script", "script", type=click.Path(exists=True, dir_okay=False), default=None,
              help="run_request replays this JSON list of actions instead of a model (tests, demos).")
@click.option("--no-agent", is_flag=True, help="Serve the device's tools only (no run_request).")
@planner_options
def serve(transport: str, host: str, port: int, insecure_lan: bool, token_file: str | None, device: str,
          apps: str | None, eta: str, trace_dir: str | None, max_steps: int, confirm_timeout: float, script: str | None,
          no_agent: bool, model: str,
          endpoint: str | None, temperature: float, max_new_tokens: int, pull: bool) -> None:
    """Serve a device's tools (with their semantics) and the agent (run_request) to MCP hosts."""
    from ..serve.auth import check_bind, load_or_create_token

    token = where = None
    if transport == "http":
        check_bind(host, tls=False, insecure_lan=insecure_lan)
        token, where = load_or_create_token(Path(token_file) if token_file else None)
    elif token_file is not None:
        raise UsageError("--token-file guards the HTTP transport; stdio is the host's own pipe")
    try:
        from ..serve.mcp_server import PhoneMcpServer
    except ImportError as exc:
        raise UsageError("pocketpilot mcp serve needs the mcp extra: pip install 'pocketpilot[mcp]'") from exc
    chosen = [a.strip() for a in apps.split(",") if a.strip()] if apps else None
    executor, evidence = _device(device, chosen)
    tools = executor.tools()  # specs: skills and notes attach by each tool's declared world
    kwargs: dict[str, Any] = {}
    if eta == "default":
        from ..evaluation.task_episode import load_harness_kit

        kwargs = dict(load_harness_kit().session_kwargs(tools, memory=False, memory_search=False))
    if evidence:
        kwargs["evidence"] = evidence
    ctx = click.get_current_context()

    def planner() -> Any:
        if script is not None:
            return scripted(script)
        with ctx.scope(cleanup=False):  # the planner flags (--threads, --n-ctx...) live in the context
            return build_planner(model, endpoint, temperature, max_new_tokens, pull)

    server = PhoneMcpServer(executor, None if no_agent else planner,
                            trace_dir=Path(trace_dir) if trace_dir else pocketpilot_home() / "mcp-traces",
                            session_kwargs=kwargs, max_steps=max_steps, confirm_timeout_s=confirm_timeout)
    click.echo(f"pocketpilot mcp serve: {len(tools)} tools of {device} over {transport}"
               + (f" at http://{host}:{port}/mcp (bearer token in {where})" if token else ""), err=True)
    if token is None:
        server.run("stdio")
    else:
        server.run_http(token, host=host, port=port)


def _device(device: str, apps: list[str] | None) -> tuple[Any, list[str]]:
    if device == "sandbox":
        from ..evaluation.task_episode import device_clock
        from ..executor.sandbox import EVERYDAY_APPS, SandboxExecutor, SandboxPhone

        phone = SandboxPhone()
        return SandboxExecutor(phone, apps or list(EVERYDAY_APPS)), [device_clock(phone.state.now)]
    if apps:
        raise UsageError("--apps picks sandbox apps; a device exposes its own tools")
    from .devices import build_device_executor

    executor, _ = build_device_executor(device)
    return executor, []
