"""Typer commands: parse, call one pipeline function, print, map errors to exit codes."""

from __future__ import annotations

import difflib
import inspect
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from enum import Enum, StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from prhub.config import ENV, Settings, load_settings, version
from prhub.errors import Interrupted, PrhubError


class _Help:
    """Switches shown without a type (`--dry-run`, not `--dry-run <bool>`), and an unknown
    option answered only with names close to it."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False):
                param.metavar = ""
        return params

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            parsed: list[str] = super().parse_args(ctx, args)  # type: ignore[misc]
        except Exception as exc:  # click's NoSuchOption, whichever copy of click typer uses
            if type(exc).__name__ == "NoSuchOption":
                exc.possibilities = _guesses(exc.option_name, self.get_params(ctx))  # type: ignore[attr-defined]
            raise
        return parsed


def _guesses(typo: str, params: list[Any]) -> list[str]:
    """Options close to `typo` without their dashes (click keeps them: --bogus is near --jobs),
    or a prefix either way: --rep for --repo, --output for --out."""
    names = [o[2:] for p in params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
    bare = typo.lstrip("-")
    close = difflib.get_close_matches(bare, names, n=3, cutoff=0.7)
    prefixed = [
        n
        for n in names
        if min(len(n), len(bare)) >= 3 and (n.startswith(bare) or bare.startswith(n))
    ]
    return ["--" + n for n in dict.fromkeys([*close, *prefixed])]


class _Command(_Help, TyperCommand):
    pass


class _Group(_Help, TyperGroup):
    pass


app = typer.Typer(
    cls=_Group,
    help="Chinese digests of merged GitHub pull requests: one per PR, one per ISO week.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",  # help texts escape their brackets: \[default: 4]
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"prhub {version()}")
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


class Format(StrEnum):
    markdown = "markdown"
    json = "json"
    html = "html"


class ResponseMode(StrEnum):
    json_schema = "json_schema"
    json_object = "json_object"


Fmt = Annotated[Format, typer.Option("--format", help="output format")]
DryRunFlag = Annotated[
    bool, typer.Option("--dry-run", help="fetch and prepare only: show calls, tokens and cost")
]


def _text(text: str, default: Any = None) -> str:
    """Help text with its default; rich markup would take an unescaped [...] for a style."""
    if default is None:
        return text
    shown = str(default).replace("[", r"\[")
    return rf"{text} \[default: {shown}]"


# Options every digesting command takes, and those of the commands that cover a week. They are
# written once here and added to each command's signature by `_with`.
def _opt(kind: Any, *flags: str, text: str, default: Any = None) -> tuple[Any, Any]:
    """One option's annotation and default; without a default the value may be None."""
    return Annotated[
        kind if default is not None else kind | None, typer.Option(*flags, help=text)
    ], default


def _set(name: str, kind: Any, text: str, default: Any = None) -> tuple[Any, Any]:
    """The option of a setting: its variable and built-in default named in its help."""
    text += f" (env {ENV[name]})" if name in ENV else ""
    shown = Settings.model_fields[name].default if default is None else default
    return _opt(kind, "--" + name.replace("_", "-"), text=_text(text, shown))


SHARED = {
    "repo": _set("repo", str, "owner/name"),
    "github_url": _set("github_url", str, "GitHub API URL"),
    "model": _set("model", str, "model name"),
    "response_mode": _set("response_mode", ResponseMode, "structured output of the endpoint"),
    "input_budget": _set("input_budget", int, "prompt tokens per call"),
    "max_calls": _set("max_calls", int, "map calls for a PR too big for one"),
    "store": _set("store", Path, "SQLite store", "prhub.db in the user data dir"),
    "refresh": _opt(bool, "--refresh", text="refetch and resummarise everything", default=False),
    "config": _opt(
        Path,
        "--config",
        text=_text(
            "config file (env PRHUB_CONFIG)", "./prhub.toml, else ./pyproject.toml [tool.prhub]"
        ),
    ),
    "prompt_dir": _set("prompt_dir", Path, "your own prompt versions, tried first"),
    "quiet": _opt(
        bool, "--quiet", "-q", text="no progress, no summary (weekly: its path)", default=False
    ),
    "verbose": _opt(bool, "--verbose", "-v", text="log each request and retry", default=False),
}
WEEK = {
    "week": _opt(int, "--week", text=_text("ISO week", "the last complete week")),
    "year": _opt(int, "--year", text=_text("ISO year of --week", "the current one")),
    "since": _opt(str, "--since", text="first date, instead of --week"),
    "until": _opt(str, "--until", text=_text("last date, inclusive", "now")),
    "tz": _set("tz", str, "timezone of the week"),
    "jobs": _set("jobs", int, "PRs summarised at once"),
}
MAX_PR = 2**31 - 1  # GitHub's numbers are 32-bit; a larger one is a typo

# The options that are settings (the rest choose what a run does, not how).
SETTING_FLAGS = (
    *("repo", "github_url", "model", "response_mode", "input_budget", "max_calls"),
    *("store", "refresh", "prompt_dir", "tz", "jobs", "allow_unmerged"),
)
WINDOW_FLAGS = ("year", "week", "since", "until")
C = TypeVar("C", bound=Callable[..., None])


def _with(*groups: dict[str, tuple[Any, Any]]) -> Callable[[C], C]:
    """Adds the options of `groups` to a command's signature; they arrive in its **options."""

    def add(command: C) -> C:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        extra = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind
            )
            for group in groups
            for name, (kind, default) in group.items()
        ]
        command.__signature__ = signature.replace(parameters=[*own, *extra])  # type: ignore[attr-defined]
        return command

    return add


def _settings(options: dict[str, Any]) -> Settings:
    """Settings from a command's options: those it has are flags, the rest come from elsewhere."""
    from prhub import logmask

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
    return load_settings(flags, config=options.get("config"))


def _fail(exc: PrhubError) -> NoReturn:
    typer.echo(f"prhub: error: {exc}", err=True)
    raise typer.Exit(exc.exit_code)


def _warn(settings: Settings) -> None:
    """Says before a run what in its settings will cost the user (quiet or not)."""
    from prhub import progress

    for line in progress.notices(settings):
        typer.echo(f"prhub: {line}", err=True)


@app.command(cls=_Command)
@_with(SHARED)
def summarize(
    pr: Annotated[
        int,
        typer.Option("--pr", help="number of the merged PR", show_default=False, min=1, max=MAX_PR),
    ],
    allow_unmerged: Annotated[
        bool, typer.Option("--allow-unmerged", help="digest a PR that is not merged")
    ] = False,
    dry_run: DryRunFlag = False,
    fmt: Fmt = Format.markdown,
    out: Annotated[
        Path | None, typer.Option("--out", help=_text("write to this file", "stdout"))
    ] = None,
    **options: Any,
) -> None:
    """Digest one merged PR in Chinese: title, reading verdict, advice, risks."""
    started = time.monotonic()
    try:
        settings = _settings({**options, "allow_unmerged": allow_unmerged})
        _warn(settings)
        from prhub import pipeline, progress  # heavy SDKs load only when a command runs

        if dry_run:
            with pipeline.Run(settings, "dry-run") as run:
                plan = run.dry_run_pr(pr)
            pipeline.write(progress.dry_run_text(plan, settings), out)
            return
        run, done = pipeline.Run(settings, "summarize"), False
        try:
            with run:
                digest = run.summarize(pr)
            pipeline.publish_digest(digest, settings, fmt.value, out)
            done = True
        finally:
            # A failed run still says what it paid for.
            if not options["quiet"] and (done or run.stats.usage.calls):
                line = progress.run_summary(run.stats, time.monotonic() - started, settings)
                typer.echo(f"prhub: {line}", err=True)
    except PrhubError as exc:
        _fail(exc)


@app.command(cls=_Command)
@_with(WEEK, SHARED)
def weekly(
    dry_run: DryRunFlag = False,
    fmt: Fmt = Format.markdown,
    out: Annotated[
        str | None,
        typer.Option(
            "--out", help=_text("file, or - for stdout", "YEAR-WNN.md in reports/OWNER/REPO")
        ),
    ] = None,
    **options: Any,
) -> None:
    """Write the Chinese report of an ISO week: highlights, trends, risks, key PRs."""
    try:
        settings = _settings(options)
        _warn(settings)
        from prhub import pipeline, progress

        if dry_run:
            w = pipeline.window(settings, **{n: options[n] for n in WINDOW_FLAGS})
            with (
                progress.Display(options["quiet"]) as display,
                pipeline.Run(settings, "dry-run", progress=display) as run,
            ):
                plan = run.dry_run_week(w)
            text = progress.dry_run_text(plan, settings)
            pipeline.write(text, None if out in (None, "-") else Path(out))
            return
        _week("weekly", settings, options, lambda r: pipeline.publish_weekly(r, fmt.value, out))
    except PrhubError as exc:
        _fail(exc)


@app.command(cls=_Command)
@_with(WEEK, SHARED)
def labels(
    tag: Annotated[str | None, typer.Option("--tag", help="only this tag")] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help=_text("write to this file", "stdout"))
    ] = None,
    **options: Any,
) -> None:
    """Show the week's digests grouped by tag (module, type, label)."""
    try:
        settings = _settings(options)
        _warn(settings)
        from prhub import pipeline

        _week("labels", settings, options, lambda r: pipeline.publish_labels(r, tag, settings, out))
    except PrhubError as exc:
        _fail(exc)


def _week(
    command: str, settings: Settings, options: dict[str, Any], publish: Callable[[Any], Any]
) -> None:
    """Runs a week's command, publishes its report, says where and what it cost."""
    from prhub import pipeline, progress

    started = time.monotonic()
    w = pipeline.window(settings, **{n: options[n] for n in WINDOW_FLAGS})
    display = progress.Display(options["quiet"])
    run, done = pipeline.Run(settings, command, progress=display), False
    try:
        with display, run:
            report = run.weekly(w, narrate_week=command == "weekly")
        written = publish(report)
        if written is not None and options["quiet"]:
            typer.echo(written)  # on stdout, for scripts: `report=$(prhub weekly -q)`
        elif written is not None:
            display.line(f"wrote {written}")
        done = True
    finally:
        if done or run.stats.usage.calls:  # a failed run still says what it paid for
            display.line(progress.run_summary(run.stats, time.monotonic() - started, settings))
    pipeline.fail_partly(report)


class ConfigFormat(StrEnum):
    text = "text"
    json = "json"


@app.command("config", cls=_Command)
@_with({n: SHARED[n] for n in ("repo", "config")})
def show_config(
    fmt: Annotated[ConfigFormat, typer.Option("--format", help="text, or json for scripts")] = (
        ConfigFormat.text
    ),
    **options: Any,
) -> None:
    """Print every effective setting and where it came from; secrets are masked."""
    from prhub import progress

    try:
        settings = _settings(options)
    except PrhubError as exc:
        _fail(exc)
    if fmt is ConfigFormat.json:
        typer.echo(progress.describe_json(settings))
        return
    for row in progress.describe(settings):
        typer.echo(row.text())


@app.command(cls=_Command)
@_with({"prompt_dir": SHARED["prompt_dir"]})
def prompts(**options: Any) -> None:
    """List the prompt templates and their versions; the latest is used."""
    from prhub import pipeline

    try:
        for line in pipeline.listing(options["prompt_dir"]):
            typer.echo(line)
    except PrhubError as exc:
        _fail(exc)


@app.command("init-ci", cls=_Command)
def init_ci(
    path: Annotated[
        Path, typer.Argument(help="the repository checkout to add the workflow to")
    ] = Path("."),
    install: Annotated[
        str | None,
        typer.Option(
            "--install",
            help=_text("git URL or pip requirement that installs prhub", "this version from PyPI"),
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing workflow")] = False,
) -> None:
    """Write the weekly-report GitHub Actions workflow into a repository."""
    from prhub import ci

    try:
        written = ci.init_ci(path, install=install, force=force)
    except PrhubError as exc:
        _fail(exc)
    typer.echo(ci.next_steps(written, install), nl=False)


def main() -> None:
    """The console script: anything unforeseen is one line and exit 1, unless --verbose."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    try:
        app(prog_name="prhub")
    except Interrupted as exc:
        kept = f" ({exc.kept})" if exc.kept else ""
        typer.echo(f"prhub: interrupted; what was done is kept{kept}, rerun to go on", err=True)
        sys.stderr.flush()
        sys.stdout.flush()
        # Requests still in flight are abandoned: their threads must not hold the exit.
        os._exit(exc.exit_code)
    except Exception as exc:
        if "--verbose" in sys.argv or "-v" in sys.argv:
            raise
        typer.echo(
            f"prhub: error: unexpected {type(exc).__name__} (a bug; --verbose shows where)",
            err=True,
        )
        sys.exit(1)


_signalled: list[int] = []


def _interrupt(signum: int, frame: object) -> None:
    """The first SIGINT or SIGTERM stops new requests and unwinds; a second exits at once."""
    if _signalled:
        os._exit(128 + signum)
    _signalled.append(signum)
    if "prhub.retry" in sys.modules:  # nothing can be in flight before it is loaded
        sys.modules["prhub.retry"].halt()
    raise Interrupted(signum)
