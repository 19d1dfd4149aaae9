"""Typer commands: parse, build the settings, call one `run.commands` function, print its
outcome, exit with its code."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from prhub import __version__
from prhub.cli.options import (
    BATCH,
    MAX_PR,
    POST,
    SHARED,
    WEEK,
    WINDOW_FLAGS,
    Command,
    DryRunFlag,
    Fmt,
    Group,
    help_text,
    out_format,
    pr_option,
    with_options,
)
from prhub.cli.options import (
    settings as build_settings,
)
from prhub.cli.outcome import ended, fail, said
from prhub.errors import PrhubError

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


@app.command(cls=Command)
@with_options(BATCH, SHARED)
def summarize(
    prs: Annotated[
        list[str],
        typer.Option(
            "--pr",
            help=f"the merged PR: its number (1..{MAX_PR}), #number or URL",
            show_default=False,
            metavar="PR",
        ),
    ],
    allow_unmerged: Annotated[
        bool, typer.Option("--allow-unmerged", help="digest a PR that is not merged")
    ] = False,
    dry_run: DryRunFlag = False,
    fmt: Fmt = None,
    out: Annotated[
        Path | None, typer.Option("--out", help=help_text("write to this file", "stdout"))
    ] = None,
    **options: Any,
) -> None:
    """Digest one merged PR in Chinese: title, reading verdict, advice, risks."""
    options["repo"], pr = pr_option(prs, options["repo"])  # a PR's URL names its repository
    chosen = out_format(fmt, out)
    try:
        settings = build_settings({**options, "allow_unmerged": allow_unmerged})
        from prhub.run import commands

        if dry_run:
            ended(commands.dry_run(settings, number=pr, out=out), quiet=True)
            return
        ended(commands.summarize(settings, pr, chosen, out), options["quiet"])
    except PrhubError as exc:
        fail(exc)


@app.command(cls=Command)
@with_options(WEEK, POST, BATCH, SHARED)
def weekly(
    dry_run: DryRunFlag = False,
    fmt: Fmt = None,
    out: Annotated[
        str | None,
        typer.Option(
            "--out", help=help_text("file, or - for stdout", "YEAR-WNN.md in reports/OWNER/REPO")
        ),
    ] = None,
    all_repos: Annotated[
        bool,
        typer.Option("--all", help="each repository the config file's `repos` names, and an index"),
    ] = False,
    **options: Any,
) -> None:
    """Write the Chinese report of an ISO week: highlights, trends, risks, key PRs; post it as a
    discussion or to a chat webhook, once a week."""
    chosen = out_format(fmt, out)
    try:
        if all_repos:
            _all_repos(options, chosen, out, dry_run)
            return
        settings = build_settings(options)
        from prhub.cli.display import Display
        from prhub.run import commands

        when = {n: options[n] for n in WINDOW_FLAGS}
        with Display(options["quiet"]) as display:
            if dry_run:
                done = commands.dry_run(settings, when=when, out=out, progress=display)
            else:
                done = commands.weekly(settings, when, chosen, out, progress=display)
        ended(done, options["quiet"])
    except PrhubError as exc:
        fail(exc)


def _all_repos(options: dict[str, Any], chosen: Any, out: str | None, dry_run: bool) -> None:
    """`weekly --all`: every repository of the config file in one run, each with its section."""
    for flag, given in (("--repo", options["repo"]), ("--out", out)):
        if given is not None:
            raise typer.BadParameter(
                f"--all writes each configured repository's report to its own path: drop {flag}",
                param_hint="'--all'",
            )
    from prhub.cli.display import Repos
    from prhub.cli.texts import notices
    from prhub.run import many

    quiet = options["quiet"]
    settings = build_settings(options, runs=False)
    for line in notices(settings):
        typer.echo(f"prhub: {line}", err=True)
    done = many.weekly_all(
        settings,
        lambda name: build_settings({**options, "repo": name}, runs=False),
        {n: options[n] for n in WINDOW_FLAGS},
        chosen,
        Repos(quiet, said),
        dry_run=dry_run,
    )
    if done.index is not None:
        if quiet:
            typer.echo(done.index)
        else:
            typer.echo(f"prhub: {'wrote' if done.changed else 'unchanged'} {done.index}", err=True)
    if not quiet:
        typer.echo(f"prhub: {many.summary_line(done)}", err=True)
    if done.error is not None:
        fail(done.error)


@app.command(cls=Command)
@with_options(WEEK, SHARED)
def labels(
    tag: Annotated[str | None, typer.Option("--tag", help="only this tag")] = None,
    fmt: Fmt = None,
    out: Annotated[
        Path | None, typer.Option("--out", help=help_text("write to this file", "stdout"))
    ] = None,
    **options: Any,
) -> None:
    """Show the week's digests grouped by tag (module, type, label)."""
    chosen = out_format(fmt, out)
    try:
        settings = build_settings(options)
        from prhub.cli.display import Display
        from prhub.run import commands

        when = {n: options[n] for n in WINDOW_FLAGS}
        with Display(options["quiet"]) as display:
            done = commands.labels(settings, when, tag, chosen, out, progress=display)
        ended(done, options["quiet"])
    except PrhubError as exc:
        fail(exc)


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
        typer.echo(f"prhub: skipped {line}", err=True)
    typer.echo(f"prhub: {done.summary()}", err=True)


@app.command(cls=Command)
@with_options({n: SHARED[n] for n in ("store", "config", "quiet", "verbose")}, {"tz": WEEK["tz"]})
def site(
    out: Annotated[
        Path, typer.Argument(help="the folder to build the site in", show_default=False)
    ],
    repos: Annotated[
        list[str] | None,
        typer.Option(
            "--repo", metavar="<str>", help=help_text("only this repository (repeatable)", "all")
        ),
    ] = None,
    pdf: Annotated[
        bool | None,
        typer.Option(
            "--pdf/--no-pdf",
            help=help_text("a PDF of each week, printed by Chromium", "when Chromium is there"),
        ),
    ] = None,
    **options: Any,
) -> None:
    """Build a static site from the store: repositories, weeks, digests, tags, feed, search."""
    from prhub.names import repo_name
    from prhub.run import commands

    try:
        settings = build_settings(options, runs=False)
        names = [repo_name(r) for r in repos] if repos else None
        done = commands.site(settings, out, names, pdf=pdf)
    except PrhubError as exc:
        fail(exc)
    if done.no_pdf:  # a warning, also with --quiet: the site lacks what it usually has
        typer.echo(f"prhub: warning: no PDFs in the site: {done.no_pdf}", err=True)
    if not options["quiet"]:
        typer.echo(f"prhub: {done.summary()}", err=True)


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
