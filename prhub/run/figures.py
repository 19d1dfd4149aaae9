"""A run's figures as text: its closing line, what it cost, and what a dry run would send."""

from __future__ import annotations

from prhub.config import Price, Settings, batch_price, price
from prhub.configfile import toml_key
from prhub.model import DryRun, RunStats, Usage
from prhub.text import plural


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
    spent = dollars(online.tokens_in, online.tokens_out, rates, online.tokens_cached)
    spent += dollars(batch.tokens_in, batch.tokens_out, batch_rates, batch.tokens_cached)
    if not batch.calls:
        return f"≈ ${spent:.4f} ({settings.model})"
    return f"≈ ${spent:.4f} ({settings.model}, {plural(batch.calls, 'call')} at batch prices)"


def dollars(tokens_in: int, tokens_out: int, rates: Price, cached: int = 0) -> float:
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
    prompts = dollars(plan.tokens_in, 0, rates)
    longest = dollars(plan.tokens_in, plan.output_tokens_max, rates)
    priced = f"{settings.model}, batch prices" if settings.batch else settings.model
    return (
        f"estimated cost: ≈ ${prompts:.4f} for the prompts, at most ≈ ${longest:.4f} "
        f"with the longest replies ({priced})"
    )
