"""`pocketpilot serve`: the local service companion apps talk to (HTTP + Server-Sent Events).

Loopback by default. Another ``--host`` needs TLS (``--ssl-certfile``/``--ssl-keyfile``) or
``--insecure-lan``; the bearer token is generated at the first start and kept in the user's
config folder (mode 0600). Nothing starts before those checks pass.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..errors import BackendUnavailableError, UsageError
from ..models.store import ModelStore, pocketpilot_home
from ._planner import build_planner, planner_options

__all__ = ["serve"]


def _require_serve_extra() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise BackendUnavailableError("serve", "pip install 'pocketpilot[serve]'") from exc


class _Planners:
    """One planner per model name, shared by the sessions that ask for it (each keeps its own KV)."""

    def __init__(self, default: str, endpoint: str | None, temperature: float, max_new_tokens: int,
                 ctx: click.Context, contexts: int = 1) -> None:
        self.default, self._endpoint, self._contexts = default, endpoint, contexts
        self._temperature, self._max_new_tokens, self._ctx = temperature, max_new_tokens, ctx
        self._built: dict[str, Any] = {}

    def build(self, model: str, pull: bool) -> Any:
        with self._ctx.scope(cleanup=False):  # the planner flags (--threads, --n-ctx...) live in the context
            return build_planner(model, self._endpoint, self._temperature, self._max_new_tokens, pull,
                                 contexts=self._contexts)

    def preload(self, pull: bool) -> None:
        """Build the default model's planner now (pulling it once if allowed), before serving."""
        self._built[self.default] = self.build(self.default, pull)

    def __call__(self, model: str) -> Any:
        if model not in self._built:
            if self._endpoint is None and (model.endswith(".gguf") or "/" in model or os.sep in model):
                # a client names a model of the catalogue; which files load is the operator's choice
                raise UsageError(f"model {model!r}: a session names a catalogue model, not a file "
                                 "(the operator serves a file with `serve --model PATH`)")
            if self._endpoint is None:
                store = ModelStore()
                if not store.is_installed(store.lookup(model)):  # no download inside a request
                    raise UsageError(f"model {model!r} is not installed: pocketpilot models pull {model}")
            self._built[model] = self.build(model, pull=False)
        return self._built[model]


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback needs TLS or --insecure-lan.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option("--ssl-certfile", type=click.Path(exists=True, dir_okay=False), default=None)
@click.option("--ssl-keyfile", type=click.Path(exists=True, dir_okay=False), default=None)
@click.option("--insecure-lan", is_flag=True, help="Listen on a non-loopback address without TLS (token in clear).")
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="Where the bearer token is kept (default: the user's config folder).")
@click.option("--trace-dir", type=click.Path(file_okay=False), default=None,
              help="Where sessions' traces go (default: the pocketpilot cache).")
@click.option("--confirm-timeout", type=click.FloatRange(min=0.1), default=120.0, show_default=True,
              help="Seconds a confirmation waits for an answer before it is denied.")
@click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
              help="A browser origin allowed to call the API (repeatable; none: CORS off).")
@click.option("--max-body", type=click.IntRange(min=1024), default=64 * 1024, show_default=True,
              help="Largest request body in bytes.")
@click.option("--idle-timeout", type=click.FloatRange(min=0), default=3600.0, show_default=True,
              help="Seconds after which a session nobody called, streamed or ran anything in is closed "
                   "(its run cancelled); 0: never.")
@click.option("--events-in-memory", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Newest events a session keeps in memory; a reconnect from before them reads the trace.")
@click.option("--mcp", "mcp_servers", multiple=True, metavar="NAME=CMD",
              help="An MCP server sessions may pick as their device by NAME (repeatable).")
@click.option("--adb-port", type=int, default=None, help="adb server port for adb devices.")
@click.option("--contexts", type=click.IntRange(min=1), default=4, show_default=True,
              help="llama.cpp contexts kept over the model's weights: sessions up to this many keep their KV "
                   "resident (each costs a KV cache of --n-ctx tokens); past it the least recent goes to disk.")
@click.option("--eta", "eta_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="The harness configuration η sessions run under (a file from `pocketpilot adapter compile`; "
                   "default: the built-in one).")
@click.option("--script", "script", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Every session replays this JSON list of actions instead of a model (tests, demos).")
@click.option("--memory", "memory_db", type=click.Path(dir_okay=False), default=None,
              help="A memory store sessions search, each through its owner's caller "
                   "(needs POCKETPILOT_SERVICE_TOKEN and POCKETPILOT_ADMIN_TOKEN).")
@planner_options
def serve(host: str, port: int, ssl_certfile: str | None, ssl_keyfile: str | None, insecure_lan: bool,
          token_file: str | None, trace_dir: str | None, confirm_timeout: float, cors_origins: Sequence[str],
          max_body: int, idle_timeout: float, events_in_memory: int, mcp_servers: Sequence[str],
          adb_port: int | None, contexts: int, eta_file: str | None,
          script: str | None, memory_db: str | None, model: str,
          endpoint: str | None, temperature: float, max_new_tokens: int, pull: bool) -> None:
    """Serve sessions on phones to companion apps over HTTP, with steps as Server-Sent Events."""
    _require_serve_extra()  # before anything of pocketpilot.serve is imported: it needs starlette
    from ..serve.auth import check_bind, load_or_create_token
    from ..serve.devices import DeviceOpener, parse_mcp_option

    check_bind(host, tls=bool(ssl_certfile and ssl_keyfile), insecure_lan=insecure_lan)
    if bool(ssl_certfile) != bool(ssl_keyfile):
        raise UsageError("TLS needs both --ssl-certfile and --ssl-keyfile")
    servers = dict(parse_mcp_option(v) for v in mcp_servers)
    kit = _kit(eta_file)  # a bad η fails before the token, the model or a socket
    token, where = load_or_create_token(Path(token_file) if token_file else None)
    planners: Any
    if script is not None:
        from .mcp_serve import scripted

        scripted(script)  # a bad script fails now
        planners = lambda _model: scripted(script)  # noqa: E731 - a fresh replay per session
    else:
        planners = _Planners(model, endpoint, temperature, max_new_tokens, click.get_current_context(), contexts)
        planners.preload(pull)
    memory = _memory(memory_db)

    import uvicorn

    from ..serve import ServeConfig, create_app

    config = ServeConfig(trace_dir=Path(trace_dir) if trace_dir else pocketpilot_home() / "serve-traces",
                         confirm_timeout_s=confirm_timeout, max_body_bytes=max_body,
                         idle_timeout_s=idle_timeout or None, events_in_memory=events_in_memory,
                         cors_origins=tuple(cors_origins),
                         default_model=f"script:{Path(script).name}" if script else model)
    app = create_app(config, planners, token=token, devices=DeviceOpener(servers, adb_port), memory=memory, kit=kit)
    scheme = "https" if ssl_certfile else "http"
    click.echo(f"pocketpilot serve on {scheme}://{host}:{port} (token in {where}; console at /)", err=True)
    try:
        uvicorn.run(app, host=host, port=port, ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile,
                    log_level="warning", timeout_graceful_shutdown=3)
    finally:
        if memory is not None:
            memory.store.close()


def _memory(db: str | None) -> Any:
    if db is None:
        return None
    service, admin = os.environ.get("POCKETPILOT_SERVICE_TOKEN"), os.environ.get("POCKETPILOT_ADMIN_TOKEN")
    if not service or not admin:
        raise UsageError("--memory needs POCKETPILOT_SERVICE_TOKEN and POCKETPILOT_ADMIN_TOKEN in the environment")
    from ..memory import AccessPolicy, SqliteMemory
    from ..serve import MemoryBinding

    return MemoryBinding(SqliteMemory(db, AccessPolicy(service, admin)), service)


def _kit(eta_file: str | None) -> Any:
    if eta_file is None:
        return None
    from ..adapters import load_eta
    from ..evaluation.task_episode import HarnessKit
    from ..skills import SkillLibrary

    return HarnessKit(SkillLibrary.builtin(), eta=load_eta(eta_file))
