"""The commands' shared options, written once, and their help: switches without a type, close
suggestions for a mistyped option."""

from __future__ import annotations

import difflib
import inspect
import sys
from collections.abc import Callable, Sequence
from datetime import date
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from prhub.defaults import DEFAULTS, ENV, BatchCorrections, NotifyFormat, ResponseMode
from prhub.names import pr_ref, repo_name
from prhub.run import SUFFIXES, Format

if TYPE_CHECKING:
    from prhub.config import Settings


class _Help:
    """Switches shown without a type (`--dry-run`, not `--dry-run <bool>`), and an unknown
    option answered only with names close to it."""

    def get_params(self, ctx: Any) -> list[Any]:
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False):
                param.metavar = ""
        return params

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            # Unset, --help is None, which typer checks through a pydantic adapter; False is
            # taken as it is, so `prhub weekly --help` starts without loading pydantic.
            option.default = False
        return option

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


class Command(_Help, TyperCommand):
    def get_short_help_str(self, limit: int = 45) -> str:
        """The docstring's first paragraph in full: `prhub --help` wraps it rather than cut it."""
        return (self.short_help or self.help or "").split("\n\n")[0].strip()


class Group(_Help, TyperGroup):
    pass


Fmt = Annotated[
    Format | None,
    typer.Option("--format", help="output format [default: markdown, or --out's suffix]"),
]
DryRunFlag = Annotated[
    bool, typer.Option("--dry-run", help="fetch and prepare only: show calls, tokens and cost")
]


def help_text(text: str, default: Any = None) -> str:
    """Help text with the default it names, for the options whose default is no plain value."""
    return text if default is None else f"{text} [default: {default}]"


# Options every digesting command takes, and those of the commands that cover a week. They are
# written once here and added to each command's signature by `with_options`.
def _opt(kind: Any, *flags: str, text: str, default: Any = None) -> tuple[Any, Any]:
    """One option's annotation and default; without a default the value may be None."""
    return Annotated[
        kind if default is not None else kind | None, typer.Option(*flags, help=text)
    ], default


def _set(name: str, kind: Any, text: str, default: Any = None) -> tuple[Any, Any]:
    """The option of a setting: its variable and built-in default named in its help."""
    text += f" (env {ENV[name]})" if name in ENV else ""
    shown = DEFAULTS.get(name) if default is None else default
    return _opt(kind, "--" + name.replace("_", "-"), text=help_text(text, shown))


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
        text=help_text(
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
    "week": _opt(int, "--week", text=help_text("ISO week", "the last complete week")),
    "year": _opt(int, "--year", text=help_text("ISO year of --week", "the current one")),
    "since": _opt(str, "--since", text="first date, instead of --week"),
    "until": _opt(str, "--until", text=help_text("last date, inclusive", "now")),
    "tz": _set("tz", str, "timezone of the week"),
    "jobs": _set("jobs", int, "LLM requests in flight at once, map calls of big PRs included"),
}
# Where `weekly` posts the week besides its report: a discussion, a chat webhook.
POST = {
    "discuss": _set("discuss", str, "post the week as a discussion in this category"),
    "discuss_repo": _set(
        "discuss_repo", str, "where the discussion goes", "the digested repository"
    ),
    "report_url": _set(
        "report_url", str, "where readers find the report: a URL; {repo}, {week} filled in"
    ),
    "notify": _set("notify", str, "post the week to this chat webhook (a secret)"),
    "notify_format": _set(
        "notify_format", NotifyFormat, "the webhook's message shape", "told by its host"
    ),
}
# Where `site` is published: the feed's links are absolute on it.
SITE = {
    "site_url": _opt(
        str,
        "--url",
        text=help_text(
            "the site's address, for the feed's absolute links (env PRHUB_SITE_URL)",
            "report_url's, when it names the site's week pages",
        ),
    ),
}
BATCH = {
    "batch": _opt(
        bool,
        "--batch",
        text="send the digests' requests to the provider's Batch API at its lower price; "
        "a rerun collects them (env PRHUB_BATCH)",
        default=False,
    ),
    "wait": _opt(
        bool,
        "--wait",
        text="with --batch: poll until the batch is done, at most PRHUB_BATCH_WAIT seconds",
        default=False,
    ),
    "batch_corrections": _set(
        "batch_corrections", BatchCorrections, "where corrective calls go with --batch"
    ),
}
MAX_PR = 2**31 - 1  # GitHub's numbers are 32-bit; a larger one is a typo
# GitHub opened in 2008; a year past the next is a typo (`--year 26` for 2026).
YEARS = (2008, date.today().year + 1)
WEEK["year"] = (
    Annotated[
        int | None,
        typer.Option(
            "--year",
            help=help_text("ISO year of --week", "the current one"),
            min=YEARS[0],
            max=YEARS[1],
        ),
    ],
    None,
)


def out_format(fmt: Format | None, out: str | Path | None) -> Format:
    """The format --format names, else the one --out's suffix implies; a mismatch is refused."""
    implied = SUFFIXES.get(Path(str(out)).suffix.lower()) if out not in (None, "-") else None
    if fmt is not None and implied is not None and fmt.value != implied:
        raise typer.BadParameter(
            f"--out {out} names a {implied} file but --format is {fmt.value}: drop one",
            param_hint="'--out'",
        )
    return fmt or implied or Format.markdown


def pr_option(values: Sequence[str], repo: str | None) -> tuple[str | None, int]:
    """The repository and number of --pr (7372, #7372 or a PR's URL); one PR a run."""
    if len(values) != 1:
        raise typer.BadParameter(
            f"one PR a run, got {len(values)}: run summarize once for each", param_hint="'--pr'"
        )
    named, number = pr_ref(values[0])
    if number is None or not 1 <= number <= MAX_PR:
        raise typer.BadParameter(
            f"{values[0]!r} is no PR: give its number (1..{MAX_PR}), #number or URL",
            param_hint="'--pr'",
        )
    if named and repo and repo_name(repo).lower() != named.lower():
        raise typer.BadParameter(
            f"the URL names {named} but --repo is {repo}: drop one", param_hint="'--pr'"
        )
    return named or repo, number


# The options that are settings (the rest choose what a run does, not how).
SETTING_FLAGS = (
    *("repo", "github_url", "model", "response_mode", "input_budget", "max_calls"),
    *("store", "refresh", "prompt_dir", "tz", "jobs", "allow_unmerged"),
    *POST,
    *SITE,
    *("batch", "wait", "batch_corrections"),
)
WINDOW_FLAGS = ("year", "week", "since", "until")
C = TypeVar("C", bound=Callable[..., None])


def with_options(*groups: dict[str, tuple[Any, Any]]) -> Callable[[C], C]:
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


def settings(options: dict[str, Any], *, runs: bool = True) -> Settings:
    """Settings from a command's options: those it has are flags, the rest come from elsewhere.

    A command that `runs` without a repository given takes the one of `git remote` origin, and
    hears first what in its settings will cost the user (quiet or not)."""
    import logging

    from prhub import logmask
    from prhub.configfile import load_settings
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
        from prhub.cli.texts import notices

        for line in notices(settings):
            typer.echo(f"prhub: {line}", err=True)
    return settings
