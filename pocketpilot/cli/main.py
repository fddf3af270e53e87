"""The `pocketpilot` command: user errors print one line (no traceback) and exit 2.

The root group maps every typed error a command raises (:mod:`._errors`); ``main`` keeps a
backstop for the few raised before any command runs.
"""

from __future__ import annotations

import importlib
import logging
import sys

import click

from ..errors import PocketPilotError
from ._errors import ErrorMappingGroup, one_line

__all__ = ["cli", "main"]

# Each command is imported when it runs (or when --help lists them): importing every command
# module made each invocation pay for all of them (the benchmark's and device code's imports
# before a demo, say).
COMMANDS: dict[str, str] = {
    "run": "run:run",
    "demo": "run:demo",
    "models": "models:models",
    "trace": "trace:trace",
    "bench": "bench:bench",
    "memory": "memory:memory",
    "adapter": "adapter:adapter",
    "export": "export:export",
    "release": "export:release",
    "review": "review:review",
    "diagnose": "diagnose:diagnose",
    "evolve": "evolve:evolve",
    "devices": "devices:devices",
    "simphone": "devices:simphone",
    "checkpoint": "checkpoint:checkpoint",
    "rollout": "rollout:rollout",
    "cache": "cache:cache",
    "sandbox": "sandbox:sandbox",
    "tasks": "tasks:tasks",
    "serve": "serve:serve",
    "mcp": "mcp_serve:mcp",
}


class _LazyGroup(ErrorMappingGroup):
    """The root group: commands named in :data:`COMMANDS`, each imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, _, attr = COMMANDS[cmd_name].partition(":")
        command = getattr(importlib.import_module(f"{__package__}.{module}"), attr)
        self.add_command(command, cmd_name)
        return command


@click.group(cls=_LazyGroup,
             help="pocketpilot: run mobile planner agents on the sandbox phone, devices and traces.")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.version_option(package_name="pocketpilot")
def cli(verbose: int) -> None:
    """Root group."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def main(argv: list[str] | None = None) -> None:
    """Entry point: maps expected errors to one line on stderr."""
    try:
        cli.main(args=argv, prog_name="pocketpilot", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        click.echo("interrupted: the trace so far is kept", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except PocketPilotError as exc:
        click.echo(f"error: {one_line(exc)}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
