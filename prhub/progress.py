"""What prhub shows on the terminal: progress, a run's summary, its dry run, its settings."""

from __future__ import annotations

import json
import logging
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
    BATCH_SHARE,
    PRICES,
    SECRETS,
    Price,
    Settings,
    batch_price,
    default_store,
    price,
    toml_key,
)
from prhub.defaults import OPENAI_URL
from prhub.errors import set_secret
from prhub.logmask import shown_url
from prhub.model import Usage
from prhub.text import plural
from prhub.weekly.report import DryRun

if TYPE_CHECKING:
    from prhub.weekly.report import RunStats

STAGES = {
    "fetch": "fetching PRs",
    "batch": "batch requests answered",
    "summarize": "summarising",
    "calls": "LLM calls",
    "narrate": "weekly narrative",
    "github_wait": "seconds waited for GitHub's rate limit",
}
QUIET_PLAIN = ("calls",)  # stages with no lines in a log: one a call would flood it
EVERY_PLAIN = ("batch",)  # stages with a line at each look: a wait must show it goes on


class _Above:
    """A stream for log lines that prints them above the live bar, never into it."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def write(self, text: str) -> int:
        self.console.print(text, end="", markup=False, highlight=False, emoji=False)
        return len(text)

    def flush(self) -> None:
        self.console.file.flush()


class Display:
    """A progress bar on a terminal, plain lines elsewhere, nothing when quiet.

    While the bar is live, log lines bound for its stream are printed above it."""

    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.bar: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        self.shown: dict[str, int] = {}
        self._moved: list[logging.StreamHandler[Any]] = []
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
            above = _Above(self.bar.console)
            for handler in logging.getLogger().handlers:
                if isinstance(handler, logging.StreamHandler) and handler.stream is self.stream:
                    handler.setStream(above)  # type: ignore[arg-type]
                    self._moved.append(handler)

    def __call__(self, stage: str, done: int, total: int) -> None:
        """Shows a stage's progress; a total of 0 is a count without an end (calls)."""
        if self.quiet or (total == 0 and stage not in QUIET_PLAIN):
            return
        name = STAGES.get(stage, stage)
        if self.bar is not None:
            if stage not in self.tasks:
                self.tasks[stage] = self.bar.add_task(name, total=total or None)
            self.bar.update(self.tasks[stage], completed=done, total=total or None)
            return
        if stage in QUIET_PLAIN:
            return
        step = max(1, total // 10)  # about ten lines a stage in a CI log
        if done in (0, total) or done - self.shown.get(stage, 0) >= step or stage in EVERY_PLAIN:
            self.shown[stage] = done
            self.line(f"{name} {done}/{total}")

    def __enter__(self) -> Display:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def line(self, text: str) -> None:
        if self.quiet:
            return
        if self.bar is not None:
            _Above(self.bar.console).write(f"prhub: {text}\n")
        else:
            # One write: print() writes the line and its newline apart, and a log line from
            # another thread lands between them.
            self.stream.write(f"prhub: {text}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
        for handler in self._moved:
            handler.setStream(self.stream)
        self._moved = []


def cost(usage: Usage, settings: Settings, batch: Usage | None = None) -> str:
    """Estimated cost from the price table, or what price is missing; $0 for no call.

    `batch` is the part of `usage` sent in a batch, priced at the batch rate."""
    if not (usage.calls or usage.tokens_in or usage.tokens_out):
        return "$0.00"
    rates, batch_rates = price(settings), batch_price(settings)
    if rates is None or batch_rates is None:
        return f"cost unknown (no [prices.{toml_key(settings.model)}] in prhub.toml)"
    batch = batch or Usage()
    online = usage - batch
    dollars = _dollars(online.tokens_in, online.tokens_out, rates, online.tokens_cached)
    dollars += _dollars(batch.tokens_in, batch.tokens_out, batch_rates, batch.tokens_cached)
    if not batch.calls:
        return f"≈ ${dollars:.4f} ({settings.model})"
    return f"≈ ${dollars:.4f} ({settings.model}, {plural(batch.calls, 'call')} at batch prices)"


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
    batch: Usage | None = None,
) -> str:
    """The closing line of a run; `batch` is the part of `usage` sent in a batch."""
    hits = f" ({usage.tokens_cached:,} cached)" if usage.tokens_cached else ""
    return (
        f"{plural(prs, 'PR')} ({cached} from the store, {failed} failed) · "
        f"{plural(usage.calls, 'LLM call')} · "
        f"{usage.tokens_in:,} tokens in{hits} / {usage.tokens_out:,} out · "
        f"{cost(usage, settings, batch)} · {plural(retries, 'retry', 'retries')} · {seconds:.1f} s"
    )


def run_summary(stats: RunStats, seconds: float, settings: Settings) -> str:
    """The closing line of a run from its figures."""
    line = summary(
        stats.prs,
        stats.cached,
        stats.failed,
        stats.usage,
        stats.retries,
        seconds,
        settings,
        stats.batch_usage,
    )
    if stats.unchecked:  # published, but not as if they had passed: their footers say which
        verb = "fails" if stats.unchecked == 1 else "fail"
        line += f" · {plural(stats.unchecked, 'digest')} {verb} content checks"
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
        f"would send {plural(plan.calls, 'LLM call')}, {plan.tokens_in:,} prompt tokens, "
        f"at most {plan.output_tokens_max:,} reply tokens",
        _estimate(plan, settings),
    ]
    return "\n".join(lines) + "\n"


def _estimate(plan: DryRun, settings: Settings) -> str:
    """The dry run's cost in one sentence."""
    if plan.calls == 0:
        return "estimated cost: $0.00 (nothing to send)"
    rates = batch_price(settings) if settings.batch else price(settings)
    if rates is None:
        return f"estimated cost: unknown (no [prices.{toml_key(settings.model)}] in prhub.toml)"
    prompts = _dollars(plan.tokens_in, 0, rates)
    longest = _dollars(plan.tokens_in, plan.output_tokens_max, rates)
    priced = f"{settings.model}, batch prices" if settings.batch else settings.model
    return (
        f"estimated cost: ≈ ${prompts:.4f} for the prompts, at most ≈ ${longest:.4f} "
        f"with the longest replies ({priced})"
    )


def runs_text(records: Sequence[dict[str, Any]], settings: Settings) -> list[str]:
    """`prhub runs`: one line a past run, newest first, with what it sent and cost."""
    lines = []
    for r in records:
        counts = r["counts"]
        usage = Usage(
            calls=r["calls"],
            tokens_in=r["tokens_in"],
            tokens_out=r["tokens_out"],
            tokens_cached=counts.get("tokens_cached", 0),
        )
        model = counts.get("model") or "model not recorded"
        batch = Usage(**{k: counts.get(f"batch_{k}", 0) for k in Usage.model_fields})
        priced = cost(usage, settings.model_copy(update={"model": model}), batch)
        last = r["errors"][-1] if r["errors"] else {}
        ended = (
            "unfinished (killed or running)"
            if r["finished_at"] is None
            # A week written and not posted failed too (exit 19): said as such.
            else (
                f"{'post failed' if last.get('stage') == 'post' else 'failed'}: {last['error']}"
                if "error" in last
                else "done"
            )
        )
        lines.append(
            f"#{r['id']}  {r['started_at'][:16].replace('T', ' ')}  {r['command']}  "
            f"{counts.get('repo') or '-'}  {plural(counts.get('prs', 0), 'PR')} "
            f"({counts.get('cached', 0)} from the store, {counts.get('failed', 0)} failed) · "
            f"{plural(usage.calls, 'LLM call')} · {usage.tokens_in:,} tokens in / "
            f"{usage.tokens_out:,} out · {priced} · {ended}"
        )
    return lines or ["no runs recorded in this store"]


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
        if name in ("config_file", "sources", "batch_shares"):  # batch_shares: under prices
            continue
        if name in SECRETS:
            rows.append(row(name, value and _mask(value.get_secret_value())))
        elif name == "openai_base_url":
            rows.append(row(name, shown_url(value) or OPENAI_URL))
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
            shares = settings.batch_shares
            rows += [
                row(
                    f"prices.{toml_key(m)}",
                    {"input": i, "output": o, "cached": c, "batch": shares.get(m, BATCH_SHARE)},
                )
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
