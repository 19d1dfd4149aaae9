"""What the CLI prints of an outcome, in order, and the exit code it ends with."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import typer

from prhub.errors import Interrupted, PrhubError

if TYPE_CHECKING:
    from prhub.run.commands import Outcome


def fail(exc: PrhubError) -> NoReturn:
    typer.echo(f"prhub: error: {exc}", err=True)
    raise typer.Exit(exc.exit_code)


def said(outcome: Outcome, quiet: bool, prefix: str = "") -> None:
    """Prints what a run did, in order: where its result went, what posting did, its closing
    line, what it waits for, then each problem and its error (these quiet or not)."""

    def say(text: str, always: bool = False) -> None:
        if always or not quiet:
            typer.echo(f"prhub: {text}", err=True)

    if outcome.written is not None and quiet:
        typer.echo(outcome.written)  # on stdout, for scripts: `report=$(prhub weekly -q)`
    elif outcome.written is not None:
        say(f"{'wrote' if outcome.changed else 'unchanged'} {outcome.written}")
    for line in outcome.posted:
        say(line)
    if outcome.summary:  # a failed run still says what it paid for
        say(prefix + outcome.summary)
    if outcome.waiting:  # said, quiet or not: the report is not written yet
        say(prefix + outcome.waiting, always=True)
    for exc in [*outcome.problems, outcome.error]:
        if isinstance(exc, PrhubError):
            say(f"error: {prefix}{exc}", always=True)


def ended(outcome: Outcome, quiet: bool) -> None:
    """Prints a command's outcome and exits with its code; an interruption goes on to `main`."""
    said(outcome, quiet)
    if isinstance(outcome.error, Interrupted):
        raise outcome.error
    if outcome.exit_code:
        raise typer.Exit(outcome.exit_code)
