"""``python -m pocketpilot.executor.simphone serve|start|stop``: the simulated phone as a process."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from pathlib import Path

from ._server import SimPhone
from .launcher import SimPhoneInfo, default_backend, start_simphone, stop_simphone, write_state

logger = logging.getLogger("pocketpilot.executor.simphone")


async def _serve(args: argparse.Namespace) -> None:
    phone = SimPhone(default_backend(args.backend), host=args.host, port=args.port)
    await phone.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.state_file:
        write_state(
            Path(args.state_file),
            SimPhoneInfo(os.getpid(), phone.port, args.host, type(phone.backend).__name__),
        )
    logger.info("simulated phone serving on %s", phone.serial)
    try:
        await stop.wait()
    finally:
        await phone.stop()
        if args.state_file:
            Path(args.state_file).unlink(missing_ok=True)  # noqa: ASYNC240 - once, at shutdown


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m pocketpilot.executor.simphone")
    sub = parser.add_subparsers(dest="verb", required=True)
    serve = sub.add_parser("serve", help="run in the foreground")
    start = sub.add_parser("start", help="start in the background")
    stop = sub.add_parser("stop", help="stop the background phone")
    for p in (serve, start):
        p.add_argument("--host", default="127.0.0.1")
        p.add_argument("--port", type=int, default=0)
        p.add_argument("--backend", choices=["auto", "sandbox", "mini"], default="auto")
    serve.add_argument("--state-file")
    for p in (start, stop):
        p.add_argument("--state-dir", default=".pocketpilot/simphone")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.verb == "serve":
        asyncio.run(_serve(args))
    elif args.verb == "start":
        info = start_simphone(args.state_dir, port=args.port, host=args.host, backend=args.backend)
        logger.info("started pid %d on %s", info.pid, info.serial)
    else:
        logger.info("stopped" if stop_simphone(args.state_dir) else "nothing running")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
