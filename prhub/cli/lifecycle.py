"""The commands of a store's lifecycle: what is forgotten, and a store restored from a site."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from prhub.cli.group import app
from prhub.cli.options import SHARED, WEEK, WINDOW_FLAGS, Command, with_options
from prhub.cli.options import settings as build_settings
from prhub.cli.outcome import fail
from prhub.errors import PrhubError

TARGETS = "--week/--since (its report), --pr, --whole-repo or --pull-data"


@app.command(cls=Command)
@with_options(
    {n: SHARED[n] for n in ("repo", "store", "config")},
    {n: WEEK[n] for n in (*WINDOW_FLAGS, "tz")},
)
def forget(
    pr: Annotated[
        int | None, typer.Option("--pr", help="every digest of this PR and its fetched data", min=1)
    ] = None,
    whole_repo: Annotated[
        bool, typer.Option("--whole-repo", help="everything the store keeps of the repository")
    ] = False,
    pull_data: Annotated[
        bool,
        typer.Option(
            "--pull-data",
            help="the fetched data of PRs whose digests a stored report publishes (of --repo, "
            "else of all); the digests stay, a rerun fetches the PRs again",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="say what would go, remove nothing")
    ] = False,
    **options: Any,
) -> None:
    """Take a week, a window, a PR's digest or a repository out of the store, or prune the
    fetched data that published digests no longer need."""
    window = any(options[n] is not None for n in WINDOW_FLAGS)
    chosen = [window, pr is not None, whole_repo, pull_data]
    if sum(chosen) != 1:
        what = "name what to forget" if not any(chosen) else "name one thing to forget"
        raise typer.BadParameter(f"{what}: {TARGETS}", param_hint="'forget'")
    from prhub.run import commands

    try:
        settings = build_settings(options, runs=False)
        line = commands.forget(
            settings,
            when={n: options[n] for n in WINDOW_FLAGS},
            pr=pr,
            whole=whole_repo,
            pull_data=pull_data,
            repos=[options["repo"]] if pull_data and options["repo"] else None,
            dry=dry_run,
        )
    except PrhubError as exc:
        fail(exc)
    typer.echo(f"prhub: {line}", err=True)


@app.command("restore", cls=Command)
@with_options({n: SHARED[n] for n in ("store", "config", "verbose")})
def restore_site(
    url: Annotated[
        str,
        typer.Argument(
            help="the published site's address, e.g. https://OWNER.github.io/REPO/",
            show_default=False,
        ),
    ],
    **options: Any,
) -> None:
    """Rebuild the store from a published site: every report and digest its manifest.json
    lists, checked, or nothing (a site not published yet leaves the store empty)."""
    from prhub.run import commands

    try:
        done = commands.restore_site(build_settings(options, runs=False), url)
    except PrhubError as exc:
        fail(exc)
    typer.echo(f"prhub: {done.summary()}", err=True)
