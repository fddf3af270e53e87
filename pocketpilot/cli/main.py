"""The `pocketpilot` command: user errors print one line (no traceback) and exit 2.

The root group maps every typed error a command raises (:mod:`._errors`); ``main`` keeps a
backstop for the few raised before any command runs.
"""

from __future__ import annotations

import logging
import sys

import click

from ..errors import PocketPilotError
from ._errors import ErrorMappingGroup, one_line
from .adapter import adapter
from .bench import bench
from .cache import cache
from .checkpoint import checkpoint
from .devices import devices, simphone
from .diagnose import diagnose
from .export import export, release
from .memory import memory
from .models import models
from .review import review
from .rollout import rollout
from .run import demo, run
from .sandbox import sandbox
from .tasks import tasks
from .trace import trace

__all__ = ["cli", "main"]


@click.group(cls=ErrorMappingGroup,
             help="pocketpilot: run mobile planner agents on the sandbox phone, devices and traces.")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
@click.version_option(package_name="pocketpilot")
def cli(verbose: int) -> None:
    """Root group."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


for command in (run, demo, models, trace, bench, memory, adapter, export, release, review, diagnose, devices, simphone,
                checkpoint, rollout, cache, sandbox, tasks):
    cli.add_command(command)


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
