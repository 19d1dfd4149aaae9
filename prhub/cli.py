"""Typer commands: parse, call one pipeline function, print, map errors to exit codes."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from datetime import timedelta
from enum import Enum, StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from prhub.config import Settings, load_settings
from prhub.errors import OutputError, PartialFailure, PrhubError

app = typer.Typer(
    help="Chinese digests of merged GitHub pull requests: one per PR, one per ISO week.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _main() -> None:
    """Chinese digests of merged GitHub pull requests: one per PR, one per ISO week."""


class Format(StrEnum):
    markdown = "markdown"
    json = "json"
    html = "html"


class ResponseMode(StrEnum):
    json_schema = "json_schema"
    json_object = "json_object"


SUFFIX = {Format.markdown: "md", Format.json: "json", Format.html: "html"}

Repo = Annotated[str | None, typer.Option("--repo", help="owner/name (env PRHUB_REPO)")]
GitHubURL = Annotated[
    str | None, typer.Option("--github-url", help="GitHub API base URL (env GITHUB_API_URL)")
]
Model = Annotated[str | None, typer.Option("--model", help="model name (env PRHUB_MODEL)")]
Mode = Annotated[
    ResponseMode | None,
    typer.Option("--response-mode", help="structured output the endpoint supports"),
]
Budget = Annotated[
    int | None, typer.Option("--input-budget", help="prompt tokens per call (24000)")
]
MaxCalls = Annotated[
    int | None, typer.Option("--max-calls", help="map calls for a PR too big for one call")
]
Fmt = Annotated[Format, typer.Option("--format", help="output format")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="log each request and retry")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="no progress, no summary")]
Week = Annotated[int | None, typer.Option("--week", help="ISO week [default: last complete]")]
Year = Annotated[int | None, typer.Option("--year", help="ISO year [default: this year]")]
Since = Annotated[str | None, typer.Option("--since", help="start date (instead of --week)")]
Until = Annotated[str | None, typer.Option("--until", help="last date, inclusive")]
TZ = Annotated[str | None, typer.Option("--tz", help="timezone of the week (Asia/Shanghai)")]
Jobs = Annotated[int | None, typer.Option("--jobs", help="PRs summarised at once (4)")]
Refresh = Annotated[bool, typer.Option("--refresh", help="refetch and resummarise everything")]
StorePath = Annotated[Path | None, typer.Option("--store", help="SQLite store (PRHUB_STORE)")]
Config = Annotated[
    Path | None, typer.Option("--config", help="config file [./prhub.toml or pyproject.toml]")
]
PromptDir = Annotated[
    Path | None, typer.Option("--prompt-dir", help="your own prompt versions, tried first")
]
DryRunFlag = Annotated[
    bool, typer.Option("--dry-run", help="fetch and prepare only: show calls, tokens and cost")
]


def _settings(config: Path | None = None, **flags: Any) -> Settings:
    for key, value in flags.items():
        if isinstance(value, Enum):
            flags[key] = value.value
        elif value is False:
            flags[key] = None  # an unset switch must not hide the environment's value
    return load_settings(flags, config=config)


def _write(text: str, out: Path | None) -> None:
    """Prints, or writes the file atomically so no reader ever sees half of it."""
    if out is None:
        sys.stdout.write(text)
        return
    tmp = None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the report from readers
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())  # a power cut must not leave an empty report behind
        os.replace(tmp, out)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"cannot write {out}: {exc.strerror or exc}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fail(exc: PrhubError) -> NoReturn:
    typer.echo(f"prhub: error: {exc}", err=True)
    raise typer.Exit(exc.exit_code)


def _logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="prhub: %(message)s",
        stream=sys.stderr,
    )


@app.command()
def summarize(
    pr: Annotated[int, typer.Option("--pr", help="number of the merged PR", show_default=False)],
    repo: Repo = None,
    github_url: GitHubURL = None,
    model: Model = None,
    response_mode: Mode = None,
    input_budget: Budget = None,
    max_calls: MaxCalls = None,
    allow_unmerged: Annotated[
        bool, typer.Option("--allow-unmerged", help="digest a PR that is not merged")
    ] = False,
    store: StorePath = None,
    refresh: Refresh = False,
    config: Config = None,
    prompt_dir: PromptDir = None,
    dry_run: DryRunFlag = False,
    fmt: Fmt = Format.markdown,
    out: Annotated[Path | None, typer.Option("--out", help="write to this file")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Digest one merged PR in Chinese: title, reading verdict, advice, risks."""
    _logging(verbose)
    started = time.monotonic()
    try:
        settings = _settings(
            config,
            repo=repo,
            github_url=github_url,
            model=model,
            response_mode=response_mode,
            input_budget=input_budget,
            max_calls=max_calls,
            allow_unmerged=allow_unmerged,
            store=store,
            refresh=refresh,
            prompt_dir=prompt_dir,
        )
        from prhub import pipeline, progress, render  # heavy SDKs load only when a command runs

        if dry_run:
            _write(progress.dry_run_text(pipeline.dry_run_pr(pr, settings), settings), out)
            return
        stats = pipeline.RunStats()
        digest = pipeline.summarize_pr(pr, settings, stats=stats)
        if fmt is Format.json:
            text = render.digest_json(digest)
        elif fmt is Format.html:
            from prhub import html

            text = html.digest_html(digest, settings.tz)
        else:
            text = render.digest_markdown(digest, settings.tz)
        _write(text, out)
        if not quiet:
            line = progress.run_summary(stats, time.monotonic() - started, settings)
            typer.echo(f"prhub: {line}", err=True)
    except PrhubError as exc:
        _fail(exc)


@app.command()
def weekly(
    week: Week = None,
    year: Year = None,
    since: Since = None,
    until: Until = None,
    repo: Repo = None,
    tz: TZ = None,
    jobs: Jobs = None,
    github_url: GitHubURL = None,
    model: Model = None,
    response_mode: Mode = None,
    input_budget: Budget = None,
    max_calls: MaxCalls = None,
    store: StorePath = None,
    refresh: Refresh = False,
    config: Config = None,
    prompt_dir: PromptDir = None,
    dry_run: DryRunFlag = False,
    fmt: Fmt = Format.markdown,
    out: Annotated[
        str | None,
        typer.Option("--out", help="file, or - for stdout [reports/OWNER/REPO/YEAR-WNN.md]"),
    ] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Write the Chinese report of an ISO week: highlights, trends, risks, key PRs."""
    _logging(verbose)
    started = time.monotonic()
    try:
        settings = _settings(
            config,
            repo=repo,
            tz=tz,
            jobs=jobs,
            github_url=github_url,
            model=model,
            response_mode=response_mode,
            input_budget=input_budget,
            max_calls=max_calls,
            store=store,
            refresh=refresh,
            prompt_dir=prompt_dir,
        )
        from prhub import pipeline, progress, render

        display = progress.Display(quiet)
        try:
            if dry_run:
                plan = pipeline.dry_run_week(
                    settings, year=year, week=week, since=since, until=until, progress=display
                )
                display.close()
                _write(
                    progress.dry_run_text(plan, settings), None if out in (None, "-") else Path(out)
                )
                return
            stats = pipeline.RunStats()
            report = pipeline.weekly(
                settings,
                year=year,
                week=week,
                since=since,
                until=until,
                stats=stats,
                progress=display,
            )
        finally:
            display.close()
        if fmt is Format.json:
            text = render.weekly_json(report)
        elif fmt is Format.html:
            from prhub import html

            text = html.weekly_html(report)
        else:
            text = render.weekly_markdown(report)
        target = None if out == "-" else Path(out) if out else _report_path(report, fmt)
        _write(text, target)
        if target is not None:
            display.line(f"wrote {target}")
        display.line(progress.run_summary(stats, time.monotonic() - started, settings))
        _fail_partly(report)
    except PrhubError as exc:
        _fail(exc)


@app.command()
def labels(
    week: Week = None,
    year: Year = None,
    since: Since = None,
    until: Until = None,
    tag: Annotated[str | None, typer.Option("--tag", help="only this tag")] = None,
    repo: Repo = None,
    tz: TZ = None,
    jobs: Jobs = None,
    github_url: GitHubURL = None,
    model: Model = None,
    response_mode: Mode = None,
    input_budget: Budget = None,
    max_calls: MaxCalls = None,
    store: StorePath = None,
    refresh: Refresh = False,
    config: Config = None,
    prompt_dir: PromptDir = None,
    out: Annotated[Path | None, typer.Option("--out", help="write to this file")] = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Show the week's digests grouped by tag (module, type, label)."""
    _logging(verbose)
    started = time.monotonic()
    try:
        settings = _settings(
            config,
            repo=repo,
            tz=tz,
            jobs=jobs,
            github_url=github_url,
            model=model,
            response_mode=response_mode,
            input_budget=input_budget,
            max_calls=max_calls,
            store=store,
            refresh=refresh,
            prompt_dir=prompt_dir,
        )
        from prhub import pipeline, progress, render

        display = progress.Display(quiet)
        stats = pipeline.RunStats()
        try:
            report = pipeline.weekly(
                settings,
                year=year,
                week=week,
                since=since,
                until=until,
                narrate=False,
                stats=stats,
                progress=display,
            )
        finally:
            display.close()
        _write(render.labels_markdown(report, tag), out)
        display.line(progress.run_summary(stats, time.monotonic() - started, settings))
        _fail_partly(report)
    except PrhubError as exc:
        _fail(exc)


@app.command("config")
def show_config(
    repo: Repo = None,
    config: Config = None,
) -> None:
    """Print the effective settings and where the config file is; secrets are masked."""
    from prhub.config import describe

    try:
        settings = _settings(config, repo=repo)
    except PrhubError as exc:
        _fail(exc)
    source = settings.config_file or "none (flags, environment and defaults only)"
    typer.echo(f"config file: {source}")
    for name, value in describe(settings):
        typer.echo(f"{name} = {value}")


@app.command()
def prompts(prompt_dir: PromptDir = None) -> None:
    """List the prompt templates and their versions; the latest is used."""
    from prhub.llm import load_prompt, tasks, versions

    try:
        for task in tasks(prompt_dir):
            known = versions(task, prompt_dir)
            for version in known:
                prompt = load_prompt(task, version, prompt_dir)
                latest = "  (used)" if version == known[-1] else ""
                typer.echo(f"{prompt.id:<22} {prompt.fingerprint}  {prompt.folder}{latest}")
    except PrhubError as exc:
        _fail(exc)


def _fail_partly(report: Any) -> None:
    """Exit 12 after a report that lists PRs whose digest failed."""
    if report.failed:
        numbers = " ".join(f"#{f.number}" for f in report.failed)
        raise PartialFailure(
            f"{len(report.failed)} PR(s) failed ({numbers}); the report lists them, "
            "rerun to retry only those"
        )


def _report_path(report: Any, fmt: Format) -> Path:
    facts = report.facts
    if facts.week is not None:
        name = f"{facts.year}-W{facts.week:02d}"
    else:
        last = facts.end - timedelta(seconds=1)  # the window's end is exclusive
        name = f"{facts.start:%Y-%m-%d}_{last:%Y-%m-%d}"
    return Path("reports") / facts.repo / f"{name}.{SUFFIX[fmt]}"


@app.command("init-ci")
def init_ci(
    path: Annotated[Path, typer.Argument(help="the repository to add the workflow to")] = Path("."),
    install: Annotated[
        str | None, typer.Option("--install", help="pip requirement that installs prhub")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing workflow")] = False,
) -> None:
    """Write the weekly-report GitHub Actions workflow into a repository."""
    from prhub import ci

    try:
        written = ci.init_ci(path, repo_install=install, force=force)
    except PrhubError as exc:
        _fail(exc)
    typer.echo(f"wrote {written}: set the OPENAI_API_KEY secret, then commit it")


def main() -> None:
    """The console script: anything unforeseen is one line and exit 1, unless --verbose."""
    try:
        app(prog_name="prhub")
    except KeyboardInterrupt:
        typer.echo("prhub: interrupted; what was done is kept, rerun to go on", err=True)
        sys.exit(130)
    except Exception as exc:
        if "--verbose" in sys.argv or "-v" in sys.argv:
            raise
        typer.echo(
            f"prhub: error: unexpected {type(exc).__name__} (a bug; --verbose shows where)",
            err=True,
        )
        sys.exit(1)
