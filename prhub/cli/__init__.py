"""Floor cli: the Typer app, its options and the display. It parses, builds the settings once,
calls one `run.commands` function, prints its outcome and exits with its code."""

from prhub.cli import lifecycle  # noqa: F401 (its commands join the app)
from prhub.cli.commands import app
from prhub.cli.process import main

__all__ = ["app", "main"]
