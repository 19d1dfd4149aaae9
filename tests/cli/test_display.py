"""What a run shows: plain progress lines off a terminal, cost estimates and closing lines."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from prhub.cli.display import Display
from prhub.cli.texts import describe, describe_json, notices
from prhub.config import PRICES, Settings
from prhub.configfile import load_settings, toml_key
from prhub.model import DryRun, PlannedPR, RunStats, Usage
from prhub.run.figures import cost, dry_run_text, run_summary, summary

KNOWN = Settings(model="gpt-4o-mini")  # $0.15 in, $0.60 out per million tokens
UNKNOWN = Settings(model="local-llama")
UNKNOWN_COST = "cost unknown (no [prices.local-llama] in prhub.toml)"


def shown(quiet: bool, calls: list[tuple[str, int, int]]) -> list[str]:
    stream = io.StringIO()
    display = Display(quiet=quiet, stream=stream)
    for call in calls:
        display(*call)
    display.close()
    return stream.getvalue().splitlines()


# Display


def test_plain_lines_about_ten_per_stage():
    lines = shown(False, [("fetch", done, 100) for done in range(101)])
    assert lines == [f"prhub: fetching PRs {done}/100" for done in range(0, 101, 10)]


def test_every_step_is_shown_for_a_short_stage():
    lines = shown(False, [("summarize", done, 3) for done in range(4)])
    assert lines == [f"prhub: summarising {done}/3" for done in range(4)]


def test_jumps_are_shown_once_they_pass_a_step():
    lines = shown(False, [("fetch", done, 50) for done in (0, 3, 4, 9, 12, 50)])
    # A step is 5 PRs: 3 and 4 are too close to 0; 9 is 9 past 0; 12 is only 3 past 9.
    assert lines == [
        "prhub: fetching PRs 0/50",
        "prhub: fetching PRs 9/50",
        "prhub: fetching PRs 50/50",
    ]


def test_stages_count_their_steps_apart_and_unknown_ones_keep_their_name():
    calls = [("fetch", 0, 20), ("summarize", 0, 20), ("fetch", 2, 20), ("render", 1, 1)]
    assert shown(False, calls) == [
        "prhub: fetching PRs 0/20",
        "prhub: summarising 0/20",
        "prhub: fetching PRs 2/20",
        "prhub: render 1/1",
    ]


def test_an_empty_stage_shows_nothing():
    assert shown(False, [("fetch", 0, 0)]) == []


def test_quiet_shows_nothing_at_all():
    stream = io.StringIO()
    with Display(quiet=True, stream=stream) as display:
        for done in range(11):
            display("fetch", done, 10)
        display.line("a note")
    assert stream.getvalue() == ""


def test_line_prefixes_prhub():
    stream = io.StringIO()
    with Display(stream=stream) as display:
        display.line("wrote reports/o/r/2026-W31.md")
    assert stream.getvalue() == "prhub: wrote reports/o/r/2026-W31.md\n"


# Cost


def test_cost_with_a_known_price():
    assert (
        cost(Usage(tokens_in=1_000_000, tokens_out=1_000_000), KNOWN) == "≈ $0.7500 (gpt-4o-mini)"
    )
    assert cost(Usage(tokens_in=0, tokens_out=0), KNOWN) == "$0.00"
    assert cost(Usage(), UNKNOWN) == "$0.00"  # nothing sent costs nothing, priced or not
    assert (
        cost(Usage(tokens_in=20_000, tokens_out=0), Settings(model="gpt-4o"))
        == "≈ $0.0500 (gpt-4o)"
    )


def test_cached_prompt_tokens_are_priced_at_the_cached_rate():
    half = Usage(tokens_in=1_000_000, tokens_out=0, tokens_cached=500_000)
    assert cost(half, KNOWN) == "≈ $0.1125 (gpt-4o-mini)"  # 0.5 M at 0.15 + 0.5 M at 0.075
    mine = Settings(model="m", prices={"m": (1.0, 2.0, 1.0)})  # no discount configured
    assert cost(half, mine) == "≈ $1.0000 (m)"


def test_the_closing_line_counts_cached_tokens_when_there_are_any():
    line = summary(
        1, 0, 0, Usage(calls=2, tokens_in=5000, tokens_out=10, tokens_cached=2048), 0, 1.0, KNOWN
    )
    assert "5,000 tokens in (2,048 cached) / 10 out" in line
    assert "cached" not in summary(1, 0, 0, Usage(calls=1, tokens_in=5), 0, 1.0, KNOWN)


def test_cost_with_an_unknown_model_says_how_to_price_it():
    assert cost(Usage(tokens_in=1_000, tokens_out=1_000), UNKNOWN) == UNKNOWN_COST
    # A model name TOML cannot take bare is quoted, as the table must be written.
    assert cost(Usage(tokens_in=1, tokens_out=1), Settings(model="qwen2.5:14b")) == (
        'cost unknown (no [prices."qwen2.5:14b"] in prhub.toml)'
    )


def test_cost_uses_a_configured_price_over_the_table():
    mine = Settings(model="gpt-4o-mini", prices={"gpt-4o-mini": (1.0, 2.0, 1.0)})
    assert cost(Usage(tokens_in=500_000, tokens_out=250_000), mine) == "≈ $1.0000 (gpt-4o-mini)"
    local = Settings(model="local-llama", prices={"local-llama": (0.0, 0.0, 0.0)})
    assert cost(Usage(tokens_in=500_000, tokens_out=250_000), local) == "≈ $0.0000 (local-llama)"


# Closing lines


def stats() -> RunStats:
    usage = Usage(calls=5, tokens_in=12_345, tokens_out=678)
    return RunStats(prs=6, cached=2, failed=1, usage=usage, retries=3)


def test_summary_line():
    s = stats()
    line = summary(s.prs, s.cached, s.failed, s.usage, s.retries, 12.34, KNOWN)
    assert line == (
        "6 PRs (2 from the store, 1 failed) · 5 LLM calls · 12,345 tokens in / 678 out · "
        "≈ $0.0023 (gpt-4o-mini) · 3 retries · 12.3 s"
    )


def test_run_summary_reads_the_stats():
    assert run_summary(stats(), 0.04, UNKNOWN) == (
        "6 PRs (2 from the store, 1 failed) · 5 LLM calls · 12,345 tokens in / 678 out · "
        f"{UNKNOWN_COST} · 3 retries · 0.0 s"
    )
    assert run_summary(RunStats(), 1.0, KNOWN).startswith("0 PRs (0 from the store, 0 failed) ·")


# Dry runs


def plan(narrative_calls: int = 1) -> DryRun:
    return DryRun(
        repo="acme/rocket",
        prs=[
            PlannedPR(number=101, cached=False, calls=3, tokens_in=52_000),
            PlannedPR(number=102, cached=True, calls=0, tokens_in=0),
        ],
        narrative_calls=narrative_calls,
        narrative_tokens_in=8_000 if narrative_calls else 0,
        output_tokens_max=(3 + narrative_calls) * 4_000,
    )


def test_dry_run_text_lists_prs_the_narrative_and_totals():
    assert dry_run_text(plan(), KNOWN) == (
        "dry run for acme/rocket: nothing was sent to the model\n"
        "\n"
        "      PR  calls  prompt tokens\n"
        "    #101      3         52,000\n"
        "    #102      0              0  (stored digest reused)\n"
        "  weekly      1          8,000\n"
        "\n"
        "would send 4 LLM calls, 60,000 prompt tokens, at most 16,000 reply tokens\n"
        "estimated cost: ≈ $0.0090 for the prompts, "
        "at most ≈ $0.0186 with the longest replies (gpt-4o-mini)\n"
    )


def test_dry_run_text_without_a_narrative_or_a_price():
    text = dry_run_text(plan(narrative_calls=0), UNKNOWN)
    assert "weekly" not in text
    assert "would send 3 LLM calls, 52,000 prompt tokens, at most 12,000 reply tokens" in text
    # One sentence that says it once, not once for the prompts and again for the replies.
    assert text.endswith("\nestimated cost: unknown (no [prices.local-llama] in prhub.toml)\n")
    assert text.count("unknown") == 1


@pytest.mark.parametrize("number", [7, 123456])
def test_dry_run_rows_stay_aligned(number):
    one = DryRun(repo="o/r", prs=[PlannedPR(number=number, cached=False, calls=1, tokens_in=9)])
    header, row = dry_run_text(one, KNOWN).splitlines()[2:4]
    assert len(row) == len(header)
    assert row.endswith(" 9") and f"#{number}" in row


def test_the_summary_counts_digests_that_fail_content_checks():
    settings = Settings(model="gpt-4o-mini")
    clean = run_summary(RunStats(prs=2), 1.0, settings)
    assert "content checks" not in clean
    assert run_summary(RunStats(prs=2, unchecked=1), 1.0, settings).endswith(
        " · 1 digest fails content checks"
    )


# Settings, as `prhub config` shows them

TOKEN = "ghp_" + "x" * 36


def test_describe_lists_every_setting_once_and_masks_secrets():
    s = Settings(
        github_token=TOKEN,
        openai_base_url="http://proxy:s3cret@127.0.0.1:9/v1",
        store=Path("/data/prhub.db"),
        noise_globs=("gen/**",),
    )
    rows = {row.name: row for row in describe(s)}
    assert len(rows) == len(describe(s))  # each once
    shown = {name: row.text() for name, row in rows.items()}
    fields = set(Settings.model_fields) - {"sources", "tags", "prices", "batch_shares"}
    assert fields <= set(rows)
    assert shown["github_token"] == "github_token = set (40 characters, not shown)  # default"
    assert shown["openai_api_key"] == "openai_api_key = (not set)  # default"
    assert rows["openai_api_key"].value is None
    assert rows["openai_base_url"].value == "http://127.0.0.1:9/v1"
    assert rows["github_url"].value == "https://api.github.com"
    assert rows["store"].value == "/data/prhub.db"
    assert shown["noise_globs"] == 'noise_globs = ["gen/**"]  # default'
    assert (shown["jobs"], shown["repo"]) == ("jobs = 4  # default", "repo = null  # default")
    assert rows["config_file"].value is None
    text = "\n".join(shown.values())
    assert TOKEN not in text and "s3cret" not in text


def test_describe_shows_the_built_in_defaults():
    from prhub.config import default_store
    from prhub.prepare.noise import DATA_JSON_LINES
    from prhub.tags import TAG_ALIASES

    rows = {row.name: row for row in describe(Settings())}
    assert rows["store"].value == str(default_store())  # the path the store really opens
    assert rows["openai_base_url"].value == "https://api.openai.com/v1"
    for spelling, tag in TAG_ALIASES.items():
        assert rows[f"tags.{spelling}"] == ("tags." + spelling, tag, "default")
    for model, (cost_in, cost_out, cost_cached) in PRICES.items():
        shown = {"input": cost_in, "output": cost_out, "cached": cost_cached, "batch": 0.5}
        assert rows[f"prices.{toml_key(model)}"].value == shown
    assert rows['prices."gpt-4.1-mini"'].text().startswith('prices."gpt-4.1-mini" = {"input"')
    assert "uv.lock" in rows["noise.lock"].value
    assert "**/vendor/**" in rows["noise.vendored"].value
    assert "*_pb2.py" in rows["noise.generated"].value
    assert "*.png" in rows["noise.binary_without_patch"].value
    assert "*.csv" in rows["noise.data"].value
    assert f"**/data/**/*.json over {DATA_JSON_LINES} changed lines" in rows["noise.data"].value


def test_sources_name_the_flag_variable_or_table_of_each_value(tmp_path: Path) -> None:
    path = tmp_path / "prhub.toml"
    path.write_text(
        'tz = "UTC"\n[tags]\nascend = "npu"\n'
        '[repos."o/r"]\nmodel = "m"\n[repos."o/r".prices.m]\ninput = 1\noutput = 2\n'
    )
    s = load_settings({"repo": "o/r", "timeout": 10.0}, env={"PRHUB_JOBS": "7"}, cwd=tmp_path)
    rows = {row.name: row.source for row in describe(s)}
    assert rows["repo"] == "flag --repo"
    assert rows["timeout"] == "flag --timeout"
    assert rows["jobs"] == "env PRHUB_JOBS"
    assert rows["model"] == f'file {path} [repos."o/r"]'
    assert rows["tz"] == f"file {path}"
    assert rows["tags.ascend"] == f"file {path} [tags]"
    assert rows["prices.m"] == f'file {path} [repos."o/r".prices.m]'
    assert rows["tags.doc"] == rows["output_tokens"] == "default"
    assert rows["config_file"] == f"found in {tmp_path}"
    explicit = load_settings({}, env={}, config=path, cwd=tmp_path)
    assert {r.name: r.source for r in describe(explicit)}["config_file"] == "flag --config"


def test_describe_json_is_value_and_source_per_setting() -> None:
    data = json.loads(describe_json(Settings(jobs=2, github_token=TOKEN)))
    assert data["jobs"] == {"value": 2, "source": "default"}
    assert data["github_token"]["value"] == "set (40 characters, not shown)"
    assert data["tags.bug"] == {"value": "bugfix", "source": "default"}


def test_a_missing_github_token_is_one_warning():
    assert notices(Settings(github_token=TOKEN)) == []
    assert notices(Settings()) == [
        "warning: GITHUB_TOKEN is not set: reading GitHub unauthenticated, which github.com "
        "limits to 60 requests an hour; export GITHUB_TOKEN for 5,000"
    ]
