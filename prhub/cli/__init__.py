"""Floor cli: the Typer app, its options and the display. It parses, builds the settings once,
calls one `run.commands` function, prints its outcome and exits with its code."""

from prhub.cli import admin, commands, lifecycle  # noqa: F401 (each registers its commands)
from prhub.cli.group import app
from prhub.cli.process import main

__all__ = ["app", "main"]
