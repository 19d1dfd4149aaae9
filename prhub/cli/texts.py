"""What prhub prints of its store and its settings: past runs, warnings, `prhub config`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from prhub.config import BATCH_SHARE, PRICES, SECRETS, Settings, default_store
from prhub.configfile import toml_key
from prhub.defaults import OPENAI_URL
from prhub.errors import set_secret
from prhub.logmask import shown_url
from prhub.model import Usage
from prhub.run.figures import cost
from prhub.text import plural


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
