"""The commands that run: parse, build the settings, call one `run.commands` function, print its
outcome, exit with its code."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from prhub.cli.group import app
from prhub.cli.options import (
    BATCH,
    MAX_PR,
    POST,
    SHARED,
    SITE,
    WEEK,
    WINDOW_FLAGS,
    Command,
    DryRunFlag,
    Fmt,
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
        # The settings first: they configure logging before any library is imported.
        settings = build_settings(options)
        from prhub.cli.display import Display
        from prhub.run import commands

        settings = commands.check_posts(settings)
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
    quiet = options["quiet"]
    settings = build_settings(options, runs=False)  # first: it configures logging
    from prhub.cli.display import Repos
    from prhub.cli.texts import notices
    from prhub.run import many
    from prhub.run.commands import check_posts

    settings = check_posts(settings)
    for line in notices(settings):
        typer.echo(f"prhub: {line}", err=True)
    done = many.weekly_all(
        settings,
        lambda name: check_posts(build_settings({**options, "repo": name}, runs=False)),
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


@app.command(cls=Command)
@with_options(
    {n: SHARED[n] for n in ("store", "config", "quiet", "verbose")}, {"tz": WEEK["tz"]}, SITE
)
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
