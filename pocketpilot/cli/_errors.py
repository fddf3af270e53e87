"""One mapping from pocketpilot's typed errors to the CLI's contract: one line on stderr, exit 2.

It lives in the command tree (:class:`ErrorMappingGroup`) rather than only around
``main()``: a command that caught a typed error and re-raised it as ``click.ClickException``
got click's own treatment (``Error: …``, exit 1), and a group run on its own, as tests
and ``python -c`` do, bypassed ``main()`` altogether. Commands let typed errors propagate;
the group they run in translates them, also when a task group wrapped them in an exception
group (as concurrent rollouts do).
"""

from __future__ import annotations

import builtins
from typing import IO, Any

import click

from ..errors import PocketPilotError

__all__ = ["CliError", "ErrorMappingGroup", "one_line"]


def one_line(exc: BaseException) -> str:
    """The error's message on a single line (a multi-line message would read as several errors)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _typed(exc: BaseException) -> PocketPilotError | None:
    """The typed error behind ``exc``: itself, or the first of an exception group made only of them."""
    if isinstance(exc, PocketPilotError):
        return exc
    group = getattr(builtins, "BaseExceptionGroup", None)  # a builtin from Python 3.11
    if group is not None and isinstance(exc, group):
        inner = [_typed(e) for e in exc.exceptions]
        if inner and all(inner):
            return inner[0]
    return None


class CliError(click.ClickException):
    """A user-facing failure: ``error: <message>`` on stderr, exit status 2."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the one line (click's default prefixes ``Error:`` and may add usage)."""
        click.echo(f"error: {self.format_message()}", err=True, file=file)


class ErrorMappingGroup(click.Group):
    """A group whose commands' typed errors become :class:`CliError`."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the chosen command; a PocketPilotError from it (or its arguments) becomes CliError."""
        try:
            return super().invoke(ctx)
        except Exception as exc:
            typed = _typed(exc)
            if typed is None:
                raise
            raise CliError(one_line(typed)) from exc
