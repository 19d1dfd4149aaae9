"""The Typer group every command joins, and its own options: --version and --help."""

from __future__ import annotations

from typing import Annotated

import typer

from prhub import __version__
from prhub.cli.options import Group

# Modules beyond typer, prhub's options and errors are imported in the functions that need them:
# `prhub --help` and `--version` then start without loading pydantic, rich or the SDKs.

app = typer.Typer(
    cls=Group,
    help="Chinese digests of merged GitHub pull requests: one per PR, one per ISO week.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Click's plain help: typer's rich help would load rich and its markdown parser, tripling
    # the time `prhub --help` takes.
    rich_markup_mode=None,
    context_settings={"max_content_width": 120, "help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"prhub {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    _version: Annotated[
        bool,
        typer.Option(
            "--version", help="print the version and exit", is_eager=True, callback=_show_version
        ),
    ] = False,
) -> None:
    """Chinese digests of merged GitHub pull requests: one per PR, one per ISO week."""
