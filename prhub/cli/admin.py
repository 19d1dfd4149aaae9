"""The commands that look after prhub: its settings, its past runs, its store's imports, its
prompts, its workflow, and help."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import prhub.cli.commands  # noqa: F401 (registered first: `prhub --help` lists them first)
from prhub.cli.group import app
from prhub.cli.options import (
    SHARED,
    Command,
    Group,
    help_text,
    with_options,
)
from prhub.cli.options import (
    settings as build_settings,
)
from prhub.cli.outcome import fail
from prhub.errors import PrhubError

if TYPE_CHECKING:
    pass

# Modules beyond typer, prhub's options and errors are imported in the functions that need them:
# `prhub --help` and `--version` then start without loading pydantic, rich or the SDKs.


class ConfigFormat(StrEnum):
    text = "text"
    json = "json"


@app.command("config", cls=Command)
@with_options({n: SHARED[n] for n in ("repo", "model", "response_mode", "store", "config")})
def show_config(
    fmt: Annotated[ConfigFormat, typer.Option("--format", help="text, or json for scripts")] = (
        ConfigFormat.text
    ),
    forget_mode: Annotated[
        bool,
        typer.Option(
            "--forget-mode", help="forget the response mode learned for the endpoint and model"
        ),
    ] = False,
    **options: Any,
) -> None:
    """Print every effective setting and where it came from; secrets are masked."""
    from prhub.cli import texts
    from prhub.run import commands

    try:
        settings = build_settings(options, runs=False)
        if forget_mode:
            done = commands.forget_mode(settings)
            what = "forgot the" if done else "no"
            typer.echo(
                f"prhub: {what} response mode learned for {settings.model} at {settings.endpoint}",
                err=True,
            )
            return
        learned = commands.learned_mode(settings)
    except PrhubError as exc:
        fail(exc)
    if fmt is ConfigFormat.json:
        typer.echo(texts.describe_json(settings, learned))
        return
    for row in texts.describe(settings, learned):
        typer.echo(row.text())


@app.command(cls=Command)
@with_options({n: SHARED[n] for n in ("store", "config")})
def runs(
    limit: Annotated[int, typer.Option("--limit", help="how many, newest first", min=1)] = 20,
    **options: Any,
) -> None:
    """List past runs from the store: command, PRs, LLM calls, tokens and estimated cost."""
    from prhub.cli.texts import runs_text
    from prhub.run import commands

    try:
        settings = build_settings(options, runs=False)
        for line in runs_text(commands.runs(settings, limit), settings):
            typer.echo(line)
    except PrhubError as exc:
        fail(exc)


@app.command("import", cls=Command)
@with_options({n: SHARED[n] for n in ("store", "config", "verbose")})
def import_(
    folder: Annotated[
        Path,
        typer.Argument(
            help="a built site or a folder of `--format json` reports and digests",
            show_default=False,
        ),
    ],
    **options: Any,
) -> None:
    """Restore digests and weekly reports from prhub's JSON into the store: a rerun is free."""
    from prhub.run import commands

    try:
        done = commands.import_(build_settings(options, runs=False), folder)
    except PrhubError as exc:
        fail(exc)
    for line in done.problems:
        typer.echo(f"prhub: refused {line}", err=True)
    typer.echo(f"prhub: {done.summary()}", err=True)
    if refused := done.refused():
        fail(refused)


@app.command(cls=Command)
@with_options({"prompt_dir": SHARED["prompt_dir"]})
def prompts(**options: Any) -> None:
    """List the prompt templates and their versions; the latest is used."""
    from prhub.run import commands

    try:
        folder = options["prompt_dir"]
        if folder is not None and not folder.is_dir():
            from prhub.errors import ConfigError

            raise ConfigError(f"prompt directory {folder} (flag --prompt-dir) is no directory")
        for line in commands.prompts(folder):
            typer.echo(line)
    except PrhubError as exc:
        fail(exc)


@app.command("init-ci", cls=Command)
def init_ci(
    path: Annotated[
        Path, typer.Argument(help="the repository checkout to add the workflow to")
    ] = Path("."),
    action: Annotated[
        str | None,
        typer.Option(
            "--action",
            help=help_text("prhub's Action, OWNER/REPO@TAG", "this prhub's repository and version"),
        ),
    ] = None,
    install: Annotated[
        str | None,
        typer.Option("--install", help=help_text("pip requirement for prhub", "the Action's own")),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing workflow")] = False,
    pages: Annotated[
        bool,
        typer.Option(
            "--pages",
            help="publish the site on GitHub Pages instead of committing each report",
        ),
    ] = False,
    all_repos: Annotated[
        bool, typer.Option("--all", help="every repository prhub.toml lists, in one run")
    ] = False,
) -> None:
    """Write the weekly GitHub Actions workflow into a repository (--pages: the site on Pages)."""
    from prhub.run import commands

    try:
        _, steps = commands.init_ci(
            path, action=action, install=install, force=force, pages=pages, all_repos=all_repos
        )
    except PrhubError as exc:
        fail(exc)
    typer.echo(steps, nl=False)


@app.command("help", cls=Command)
def show_help(
    ctx: typer.Context,
    command: Annotated[str | None, typer.Argument(help="the command to explain")] = None,
) -> None:
    """Show prhub's help, or a command's: `prhub help weekly` is `prhub weekly --help`."""
    group = ctx.parent.command if ctx.parent else ctx.command
    parent = ctx.parent or ctx
    if command is None:
        typer.echo(group.get_help(parent))
        return
    found = group.get_command(parent, command) if isinstance(group, Group) else None
    if found is None:
        raise typer.BadParameter(f"no such command {command!r}", param_hint="COMMAND")
    with typer.Context(found, info_name=command, parent=parent) as sub:
        typer.echo(found.get_help(sub))
