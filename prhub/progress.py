"""What prhub shows on the terminal: progress, a run's summary, its dry run, its settings."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from prhub.config import (
    PRICES,
    SECRETS,
    Price,
    Settings,
    default_store,
    price,
    shown_url,
    toml_key,
)
from prhub.errors import set_secret
from prhub.model import Usage
from prhub.report import DryRun

if TYPE_CHECKING:
    from prhub.report import RunStats

STAGES = {"fetch": "fetching PRs", "summarize": "summarising"}


class Display:
    """A progress bar on a terminal, plain lines elsewhere, nothing when quiet."""

    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.bar: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        self.shown: dict[str, int] = {}
        if not quiet and self.stream.isatty():
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self.bar.start()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.quiet or total == 0:
            return
        name = STAGES.get(stage, stage)
        if self.bar is not None:
            if stage not in self.tasks:
                self.tasks[stage] = self.bar.add_task(name, total=total)
            self.bar.update(self.tasks[stage], completed=done, total=total)
            return
        step = max(1, total // 10)  # about ten lines a stage in a CI log
        if done in (0, total) or done - self.shown.get(stage, 0) >= step:
            self.shown[stage] = done
            self.line(f"{name} {done}/{total}")

    def __enter__(self) -> Display:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def line(self, text: str) -> None:
        if not self.quiet:
            print(f"prhub: {text}", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def cost(usage: Usage, settings: Settings) -> str:
    """Estimated cost from the price table, or what price is missing."""
    rates = price(settings)
    if rates is None:
        return f"cost unknown (no [prices.{toml_key(settings.model)}] in prhub.toml)"
    dollars = _dollars(usage.tokens_in, usage.tokens_out, rates, usage.tokens_cached)
    return f"≈ ${dollars:.4f} ({settings.model})"


def _dollars(tokens_in: int, tokens_out: int, rates: Price, cached: int = 0) -> float:
    fresh = tokens_in - cached
    return (fresh * rates[0] + cached * rates[2] + tokens_out * rates[1]) / 1_000_000


def summary(
    prs: int,
    cached: int,
    failed: int,
    usage: Usage,
    retries: int,
    seconds: float,
    settings: Settings,
) -> str:
    """The closing line of a run."""
    hits = f" ({usage.tokens_cached:,} cached)" if usage.tokens_cached else ""
    return (
        f"{prs} PRs ({cached} from the store, {failed} failed) · {usage.calls} LLM calls · "
        f"{usage.tokens_in:,} tokens in{hits} / {usage.tokens_out:,} out · "
        f"{cost(usage, settings)} · {retries} retries · {seconds:.1f} s"
    )


def run_summary(stats: RunStats, seconds: float, settings: Settings) -> str:
    """The closing line of a run from its figures."""
    line = summary(
        stats.prs, stats.cached, stats.failed, stats.usage, stats.retries, seconds, settings
    )
    if stats.unchecked:  # published, but not as if they had passed: their footers say which
        line += f" · {stats.unchecked} digests fail content checks"
    return line


def dry_run_text(plan: DryRun, settings: Settings) -> str:
    """What a run would send: per PR, then totals and the cost estimate."""
    lines = [f"dry run for {plan.repo}: nothing was sent to the model", ""]
    lines.append(f"{'PR':>8}  {'calls':>5}  {'prompt tokens':>13}")
    for p in plan.prs:
        note = "  (stored digest reused)" if p.cached else ""
        lines.append(f"{'#' + str(p.number):>8}  {p.calls:>5}  {p.tokens_in:>13,}{note}")
    if plan.narrative_calls:
        lines.append(f"{'weekly':>8}  {plan.narrative_calls:>5}  {plan.narrative_tokens_in:>13,}")
    lines += [
        "",
        f"would send {plan.calls} LLM calls, {plan.tokens_in:,} prompt tokens, "
        f"at most {plan.output_tokens_max:,} reply tokens",
        _estimate(plan, settings),
    ]
    return "\n".join(lines) + "\n"


def _estimate(plan: DryRun, settings: Settings) -> str:
    """The dry run's cost in one sentence."""
    rates = price(settings)
    if rates is None:
        return f"estimated cost: unknown (no [prices.{toml_key(settings.model)}] in prhub.toml)"
    prompts = _dollars(plan.tokens_in, 0, rates)
    longest = _dollars(plan.tokens_in, plan.output_tokens_max, rates)
    return (
        f"estimated cost: ≈ ${prompts:.4f} for the prompts, at most ≈ ${longest:.4f} "
        f"with the longest replies ({settings.model})"
    )


def notices(settings: Settings) -> list[str]:
    """Warnings about a run's settings, one line each, before it starts."""
    if settings.github_token is None:
        return [
            "warning: GITHUB_TOKEN is not set: reading GitHub unauthenticated, which github.com "
            f"limits to 60 requests an hour; {set_secret('GITHUB_TOKEN')} for 5,000"
        ]
    return []


class Row(NamedTuple):
    """One line of `prhub config`: a setting, its effective value and where that came from."""

    name: str
    value: Any  # as JSON shows it; secrets masked
    source: str

    def text(self) -> str:
        if self.name in SECRETS:
            shown = self.value or "(not set)"
        else:
            shown = json.dumps(self.value, ensure_ascii=False)
        return f"{self.name} = {shown}  # {self.source}"


def describe(settings: Settings, learned: tuple[str, str] | None = None) -> list[Row]:
    """Every effective value with its source, built-in defaults included, secrets masked;
    `learned` is the response mode the store holds for the endpoint, when no setting chose one."""
    from prhub.tags import TAG_ALIASES

    sources = settings.sources

    def row(name: str, value: Any) -> Row:
        return Row(name, value, sources.get(name, "default"))

    none_found = "none found (--config, PRHUB_CONFIG, ./prhub.toml, ./pyproject.toml [tool.prhub])"
    found = settings.config_file
    rows = [Row("config_file", found and str(found), sources.get("config_file", none_found))]
    for name in Settings.model_fields:
        value = getattr(settings, name)
        if name in ("config_file", "sources"):
            continue
        if name in SECRETS:
            rows.append(row(name, value and _mask(value.get_secret_value())))
        elif name == "openai_base_url":
            rows.append(row(name, shown_url(value) or "https://api.openai.com/v1"))
        elif name == "github_url":
            rows.append(row(name, shown_url(value)))
        elif name == "response_mode" and learned:
            rows.append(
                Row(
                    name,
                    learned[0],
                    f"store: learned {learned[1][:19]} from the endpoint; "
                    "`prhub config --forget-mode` forgets it",
                )
            )
        elif name == "store":
            rows.append(row(name, str(value or default_store())))
        elif name == "noise_globs":
            rows.append(row(name, list(value)))
            rows += [Row(f"noise.{kind}", rule, "default") for kind, rule in _noise_rules()]
        elif name == "tags":
            tags = {**TAG_ALIASES, **value}
            rows += [row(f"tags.{toml_key(k)}", v) for k, v in tags.items()]
        elif name == "prices":
            prices = {**PRICES, **value}
            rows += [
                row(f"prices.{toml_key(m)}", {"input": i, "output": o, "cached": c})
                for m, (i, o, c) in prices.items()
            ]
        else:
            rows.append(row(name, json.loads(json.dumps(value, default=str))))
    return rows


def _noise_rules() -> list[tuple[str, list[str]]]:
    """The files prhub always leaves out of prompts, as globs a user would write."""
    from prhub import paths

    def folders(names: frozenset[str]) -> list[str]:
        return [f"**/{name}/**" for name in sorted(names)]

    def endings(items: Sequence[str]) -> list[str]:
        return [f"*{item}" for item in items]

    big_json = "**/{}/**/*.json over 200 changed lines"
    return [
        ("lock", [*sorted(paths.LOCK_FILES), "*.lock.json", "*-lock.json", "*_lock.json"]),
        ("vendored", folders(paths.VENDOR_DIRS)),
        (
            "generated",
            [
                *endings(paths.GENERATED_ENDINGS + paths.MINIFIED_ENDINGS),
                "*generated*",
                *folders(paths.GENERATED_DIRS),
            ],
        ),
        ("binary_without_patch", endings([f".{e}" for e in sorted(paths.BINARY_EXTS)])),
        (
            "data",
            [
                *endings([f".{e}" for e in sorted(paths.DATA_EXTS)]),
                *(big_json.format(d) for d in sorted(paths.DATA_DIRS)),
            ],
        ),
    ]


def describe_json(settings: Settings, learned: tuple[str, str] | None = None) -> str:
    """`prhub config --format json`: each setting's value and source, for scripts."""
    rows = {r.name: {"value": r.value, "source": r.source} for r in describe(settings, learned)}
    return json.dumps(rows, indent=2, ensure_ascii=False)


def _mask(secret: str) -> str:
    return f"set ({len(secret)} characters, not shown)"
