"""Typer commands: parse, call one pipeline function, print, map errors to exit codes."""

from __future__ import annotations

import errno
import io
import os
import signal
import sys
import time
from collections.abc import Callable
from enum import Enum, StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from prhub import __version__
from prhub.errors import Interrupted, OutputError, PrhubError
from prhub.options import (
    BATCH,
    MAX_PR,
    POST,
    SETTING_FLAGS,
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

if TYPE_CHECKING:
    from prhub.config import Settings

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


def _settings(options: dict[str, Any], *, runs: bool = True) -> Settings:
    """Settings from a command's options: those it has are flags, the rest come from elsewhere.

    A command that `runs` without a repository given takes the one of `git remote` origin, and
    hears first what in its settings will cost the user (quiet or not)."""
    import logging

    from prhub import logmask
    from prhub.config import load_settings
    from prhub.errors import ConfigError
    from prhub.names import git_origin

    logging.basicConfig(
        level=logging.INFO if options.get("verbose") else logging.WARNING,
        format="prhub: %(message)s",
        handlers=[logmask.handler(sys.stderr)],  # URLs in any library's lines lose credentials
    )
    flags: dict[str, Any] = {}
    for key in SETTING_FLAGS:
        value = options.get(key)
        if isinstance(value, Enum):
            value = value.value
        # An unset switch must not hide the environment's value.
        flags[key] = None if value is False else value
    settings = load_settings(flags, config=options.get("config"))
    if runs and settings.repo is None and (found := git_origin(Path.cwd())):
        typer.echo(f"prhub: repository {found}, from `git remote get-url origin`", err=True)
        settings = load_settings({**flags, "repo": found}, config=options.get("config"))
    if settings.wait and not settings.batch:
        raise ConfigError("--wait waits for a batch: add --batch (or PRHUB_BATCH=true)")
    if settings.prompt_dir is not None and not settings.prompt_dir.is_dir():
        where = settings.sources.get("prompt_dir", "")
        raise ConfigError(f"prompt directory {settings.prompt_dir} ({where}) is no directory")
    if runs:
        from prhub import progress

        for line in progress.notices(settings):
            typer.echo(f"prhub: {line}", err=True)
    return settings


def _posting(settings: Settings) -> Settings:
    """`settings`, once what `weekly` will post to is known (refused before any work)."""
    from prhub import pipeline

    pipeline.check_posts(settings)
    return settings


def _fail(exc: PrhubError) -> NoReturn:
    typer.echo(f"prhub: error: {exc}", err=True)
    raise typer.Exit(exc.exit_code)


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
    started = time.monotonic()
    options["repo"], pr = pr_option(prs, options["repo"])  # a PR's URL names its repository
    chosen = out_format(fmt, out)
    try:
        settings = _settings({**options, "allow_unmerged": allow_unmerged})
        from prhub import pipeline, progress
        from prhub.publish import output

        if dry_run:
            with pipeline.Run(settings, "dry-run") as run:
                plan = run.dry_run_pr(pr)
            output.write(progress.dry_run_text(plan, settings), out)
            return
        run, done = pipeline.Run(settings, "summarize"), False
        try:
            with run:
                digest = run.summarize(pr)
            waits = pipeline.waits(digest)
            if waits is None:
                output.publish_digest(digest, settings, chosen, out)  # type: ignore[arg-type]
            done = True
        finally:
            # A failed run still says what it paid for.
            if not options["quiet"] and (done or run.stats.usage.calls):
                line = progress.run_summary(run.stats, time.monotonic() - started, settings)
                typer.echo(f"prhub: {line}", err=True)
        if waits is not None:
            _waiting(waits, settings)
    except PrhubError as exc:
        _fail(exc)


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
        settings = _posting(_settings(options))
        from prhub import pipeline, progress
        from prhub.publish import output

        if dry_run:
            w = pipeline.window(settings, **{n: options[n] for n in WINDOW_FLAGS})
            with (
                progress.Display(options["quiet"]) as display,
                pipeline.Run(settings, "dry-run", progress=display) as run,
            ):
                plan = run.dry_run_week(w)
            text = progress.dry_run_text(plan, settings)
            output.write(text, None if out in (None, "-") else Path(out))
            return
        _week("weekly", settings, options, lambda r: output.publish_weekly(r, chosen, out))
    except PrhubError as exc:
        _fail(exc)


def _all_repos(options: dict[str, Any], chosen: Any, out: str | None, dry_run: bool) -> None:
    """`weekly --all`: every repository of the config file in one run, each with its section."""
    for flag, given in (("--repo", options["repo"]), ("--out", out)):
        if given is not None:
            raise typer.BadParameter(
                f"--all writes each configured repository's report to its own path: drop {flag}",
                param_hint="'--all'",
            )
    from prhub import many, progress

    settings = _posting(_settings(options, runs=False))
    for line in progress.notices(settings):
        typer.echo(f"prhub: {line}", err=True)
    many.weekly_all(
        settings,
        lambda name: _posting(_settings({**options, "repo": name}, runs=False)),
        {n: options[n] for n in WINDOW_FLAGS},
        chosen,
        quiet=options["quiet"],
        dry_run=dry_run,
    )


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
        settings = _settings(options)
        from prhub.publish import output

        _week(
            "labels",
            settings,
            options,
            lambda r: output.publish_labels(r, tag, settings, out, chosen),
        )
    except PrhubError as exc:
        _fail(exc)


def _week(
    command: str, settings: Settings, options: dict[str, Any], publish: Callable[[Any], Any]
) -> None:
    """Runs a week's command, publishes its report, says where and what it cost."""
    from prhub import pipeline, progress
    from prhub.publish import output

    started = time.monotonic()
    w = pipeline.window(settings, **{n: options[n] for n in WINDOW_FLAGS})
    display = progress.Display(options["quiet"])
    run, done, waits = pipeline.Run(settings, command, progress=display), False, None
    written = None
    try:
        with display, run:
            report = run.weekly(w, narrate_week=command == "weekly")
        waits = pipeline.waits(report)
        if waits is None:
            written, changed = publish(report) or (None, False)
            if written is not None and options["quiet"]:
                typer.echo(written)  # on stdout, for scripts: `report=$(prhub weekly -q)`
            elif written is not None:
                display.line(f"{'wrote' if changed else 'unchanged'} {written}")
        done = True
    finally:
        if done or run.stats.usage.calls:  # a failed run still says what it paid for
            display.line(progress.run_summary(run.stats, time.monotonic() - started, settings))
    if waits is not None:
        _waiting(waits, settings)
        return
    report = pipeline.report_of(report)
    failed: list[PrhubError] = []
    if command == "weekly" and (settings.discuss or settings.notify):
        posted = pipeline.post(settings, report)  # after the report is written: it is never lost
        if written is not None and posted.report is not report:
            publish(posted.report)  # with the link to its new discussion
        for line in posted.done:
            display.line(line)
        failed = posted.failed
        pipeline.post_failed(settings, run.run_id, failed)
    for exc in failed:
        typer.echo(f"prhub: error: {exc}", err=True)
    output.fail_partly(report)
    if failed:
        raise typer.Exit(failed[-1].exit_code)


def _waiting(line: str, settings: Settings) -> None:
    """Says what a batch run waits for, quiet or not: the report is not written yet. Exit 0
    (the normal course of batch mode), unless --wait waited as long as it may."""
    if settings.wait:
        from prhub.errors import BatchPending

        raise BatchPending(f"waited {settings.batch_wait:g} s (PRHUB_BATCH_WAIT) and {line}")
    typer.echo(f"prhub: {line}", err=True)


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
    from prhub import progress
    from prhub.store import modes

    try:
        settings = _settings(options, runs=False)
        if forget_mode:
            done = modes.forget_mode(settings)
            what = "forgot the" if done else "no"
            typer.echo(
                f"prhub: {what} response mode learned for {settings.model} at {settings.endpoint}",
                err=True,
            )
            return
        learned = None if modes.explicit_mode(settings) else modes.learned_mode(settings)
    except PrhubError as exc:
        _fail(exc)
    if fmt is ConfigFormat.json:
        typer.echo(progress.describe_json(settings, learned))
        return
    for row in progress.describe(settings, learned):
        typer.echo(row.text())


@app.command(cls=Command)
@with_options({n: SHARED[n] for n in ("store", "config")})
def runs(
    limit: Annotated[int, typer.Option("--limit", help="how many, newest first", min=1)] = 20,
    **options: Any,
) -> None:
    """List past runs from the store: command, PRs, LLM calls, tokens and estimated cost."""
    from prhub import progress
    from prhub.store import modes

    try:
        settings = _settings(options, runs=False)
        for line in progress.runs_text(modes.runs(settings, limit), settings):
            typer.echo(line)
    except PrhubError as exc:
        _fail(exc)


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
    from prhub.store import restore

    try:
        done = restore.import_dir(folder, _settings(options, runs=False))
    except PrhubError as exc:
        _fail(exc)
    for line in done.problems:
        typer.echo(f"prhub: refused {line}", err=True)
    typer.echo(f"prhub: {done.summary()}", err=True)
    if refused := done.refused():
        _fail(refused)


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
    from prhub import pipeline
    from prhub.names import repo_name

    try:
        settings = _settings(options, runs=False)
        names = [repo_name(r) for r in repos] if repos else None
        done = pipeline.build_site(settings, out, names, pdf=pdf)
    except PrhubError as exc:
        _fail(exc)
    if done.no_pdf:  # a warning, also with --quiet: the site lacks what it usually has
        typer.echo(f"prhub: warning: no PDFs in the site: {done.no_pdf}", err=True)
    if not options["quiet"]:
        typer.echo(f"prhub: {done.summary()}", err=True)


@app.command(cls=Command)
@with_options({"prompt_dir": SHARED["prompt_dir"]})
def prompts(**options: Any) -> None:
    """List the prompt templates and their versions; the latest is used."""
    from prhub.llm import prompt

    try:
        folder = options["prompt_dir"]
        if folder is not None and not folder.is_dir():
            from prhub.errors import ConfigError

            raise ConfigError(f"prompt directory {folder} (flag --prompt-dir) is no directory")
        for line in prompt.listing(folder):
            typer.echo(line)
    except PrhubError as exc:
        _fail(exc)


@app.command("init-ci", cls=Command)
def init_ci(
    path: Annotated[
        Path, typer.Argument(help="the repository checkout to add the workflow to")
    ] = Path("."),
    install: Annotated[
        str | None,
        typer.Option(
            "--install",
            help=help_text(
                "git URL or pip requirement for prhub", "where this prhub was installed from"
            ),
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing workflow")] = False,
    pages: Annotated[
        bool,
        typer.Option(
            "--pages",
            help="publish the site on GitHub Pages instead of committing each report",
        ),
    ] = False,
) -> None:
    """Write the weekly GitHub Actions workflow into a repository (--pages: the site on Pages)."""
    from prhub import ci

    try:
        written = ci.init_ci(path, install=install, force=force, pages=pages)
    except PrhubError as exc:
        _fail(exc)
    typer.echo(ci.next_steps(written, install, pages=pages), nl=False)


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


def main() -> None:
    """The console script: anything unforeseen is one line and exit 1, unless --verbose."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    if sys.stdout is None:  # started with stdout closed (>&-)
        _close_stdout()
    try:
        app(prog_name="prhub")
    except SystemExit:
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":  # click's mark of a broken pipe
            os._exit(128 + signal.SIGPIPE)  # quietly, as a tool the pipe killed; nothing to flush
        raise
    except Interrupted as exc:
        kept = f" ({exc.kept})" if exc.kept else ""
        typer.echo(f"prhub: interrupted; what was done is kept{kept}, rerun to go on", err=True)
        sys.stderr.flush()
        sys.stdout.flush()
        # Requests still in flight are abandoned: their threads must not hold the exit.
        os._exit(exc.exit_code)
    except Exception as exc:
        if isinstance(exc, OSError) and isinstance(sys.stdout, _ClosedStdout):
            typer.echo(f"prhub: error: cannot write to standard output: {exc.strerror}", err=True)
            sys.exit(OutputError.exit_code)
        if "--verbose" in sys.argv or "-v" in sys.argv:
            raise
        typer.echo(
            f"prhub: error: unexpected {type(exc).__name__} (a bug; --verbose shows where)",
            err=True,
        )
        sys.exit(1)


class _ClosedStdout(io.TextIOBase):
    """Standard output when there is none: each write fails as a closed file's would."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "it is closed")


def _close_stdout() -> None:
    # File descriptor 1 is held open on /dev/null, so no file prhub opens (the store) becomes
    # stdout; writes fail and say so.
    fd = os.open(os.devnull, os.O_WRONLY)
    if fd != 1:
        os.dup2(fd, 1)
        os.close(fd)
    sys.stdout = _ClosedStdout()


_signalled: list[int] = []


def _interrupt(signum: int, frame: object) -> None:
    """The first SIGINT or SIGTERM stops new requests and unwinds; a second exits at once."""
    if _signalled:
        os._exit(128 + signum)
    _signalled.append(signum)
    if "prhub.retry" in sys.modules:  # nothing can be in flight before it is loaded
        sys.modules["prhub.retry"].halt()
    raise Interrupted(signum)
