"""GitHub's rate limits: read per bucket, planned for, waited out or stopped at; ETag reruns."""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from prhub import retry
from prhub.config import Settings
from prhub.configfile import load_settings
from prhub.errors import ConfigError
from prhub.github import source as source_module
from prhub.github.ratelimit import Budget, Limited, LimitReached, Validators, budget_for
from prhub.github.source import GitHubSource
from prhub.run.run import Run, window
from prhub.store.store import Store
from tests.factories import (
    FIXTURES,
    GITHUB_TOKEN,
    REPO,
    FakeClock,
    assert_ok,
    cli_env,
    prhub,
    settings,
)
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.limits import secondary_limit

WEEK = ("weekly", "--week", "31", "--year", "2026")
WEEK_31 = [101, 102, 103, 104, 105, 106]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """One clock for the stand-in's limits and every budget a run makes, slept in no time."""
    clock = FakeClock()

    def on_the_clock(config: Settings) -> Budget:
        return Budget(config.github_wait, config.max_attempts, clock=clock.time, sleep=clock.sleep)

    monkeypatch.setattr(source_module, "budget_for", on_the_clock)
    return clock


@contextmanager
def limited_github(clock: FakeClock, **limits: Any) -> Iterator[GitHubStandIn]:
    """The GitHub stand-in over the fixtures, its limits on `clock`."""
    with GitHubStandIn(FIXTURES / "github", token=GITHUB_TOKEN, clock=clock.time, **limits) as gh:
        yield gh
    assert not gh.errors, gh.errors


def week_31(config: Settings) -> tuple[datetime, datetime]:
    w = window(config, year=2026, week=31)
    return w.start, w.end


def cli(
    github: GitHubStandIn, llm: LLMStandIn, tmp_path: Path, **extra: str
) -> dict[str, str | None]:
    """A CLI environment for acme/rocket on `github`, reports in tmp_path."""
    return cli_env(github, llm, tmp_path / "store.db", PRHUB_REPO=REPO, **extra)


def stored_numbers(path: Path) -> set[int]:
    with closing(Store(path)) as store:
        return set(store.pull_times(REPO))


# Reading the limits


def test_every_answer_tells_its_bucket_core_and_search_apart(github: GitHubStandIn) -> None:
    config = settings(github)
    with closing(GitHubSource(config, stop=retry.StopToken())) as source:
        hits = source.merged_between(REPO, *week_31(config))
        source.pull_payload(REPO, hits[0]["number"])
        core, search = source.budget.buckets["core"], source.budget.buckets["search"]
    assert (core.limit, core.left, core.used) == (5000, 4999, 1)
    assert (search.limit, search.left, search.used) == (30, 29, 1)  # one page, with its count


def test_a_spent_search_bucket_holds_searches_only(clock: FakeClock) -> None:
    with limited_github(clock, search_limit=1) as github:  # a week is one search
        config = settings(github)
        with closing(GitHubSource(config, budget=clock.budget())) as source:
            first = source.merged_between(REPO, *week_31(config))
            source.pull_payload(REPO, 101)  # core is not held by the spent search bucket
            assert clock.slept == []
            assert source.merged_between(REPO, *week_31(config)) == first  # after the minute
        assert 59 <= sum(clock.slept) <= 62
        assert github.charged() == {"core": 1, "search": 2}  # none refused: it waited first


def test_requests_in_flight_count_against_what_is_left() -> None:
    budget = Budget(60, clock=lambda: 1000.0)
    told = {"x-ratelimit-limit": "10", "x-ratelimit-remaining": "2", "x-ratelimit-reset": "2000"}
    sent = budget.admit("core")
    assert budget.settle("core", sent, 200, told) is None
    budget.admit("core")
    budget.admit("core")
    with pytest.raises(Limited) as caught:  # two in flight spend the two left
        budget.admit("core")
    assert caught.value.until == 2001 and not caught.value.refused
    assert budget.left("search") is None  # never told: not held


def test_answers_out_of_order_keep_the_fewest_left() -> None:
    budget = Budget(60, clock=lambda: 1000.0)
    sent = [budget.admit("core") for _ in range(2)]
    for left in ("7", "8"):  # the later count arrives first
        told = {
            "x-ratelimit-limit": "10",
            "x-ratelimit-remaining": left,
            "x-ratelimit-reset": "2000",
        }
        budget.settle("core", sent.pop(), 200, told)
    assert budget.left("core") == 7


# Waiting for the reset, or stopping


def test_a_week_past_the_limit_waits_for_the_reset_with_a_countdown_and_completes(
    llm: LLMStandIn,
    tmp_path: Path,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)
    # The week takes 20: one wait, whatever the (at most 3) requests in flight hold back.
    with limited_github(clock, core_limit=14, core_window=600) as github:
        started = clock.time()
        result = prhub(cli(github, llm, tmp_path), *WEEK)
        assert_ok(result)
        assert github.charged()["refused"] == 0  # it waited before GitHub had to refuse
        assert github.charged()["core"] == 20  # the repository, .gitattributes, 3 a PR
    assert (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md").is_file()
    assert 601 <= clock.time() - started <= 610  # the window's 600 s, and the reset's second
    logged = [r.getMessage() for r in caplog.records]  # the CLI's log lines, under pytest
    plan = next(line for line in logged if "needs about" in line)
    assert "fetching 6 PRs of acme/rocket needs about 18 core requests and 13 are left" in plan
    assert "the run waits for the reset" in plan
    waiting = next(line for line in logged if "waiting" in line)
    assert re.search(r"spent \(0 of 14 left\): waiting 11 min, until \d\d:\d\d, before", waiting)
    lines = result.stderr.splitlines()
    countdown = [line for line in lines if "seconds waited for GitHub's rate limit" in line]
    total = countdown[0].rsplit("/", 1)[1]
    assert countdown[0].endswith(f" 0/{total}") and countdown[-1].endswith(f" {total}/{total}")
    assert int(total) in (601, 602) and len(countdown) >= 3


def test_past_the_wait_limit_a_week_stops_with_exit_8_keeps_what_it_fetched_and_the_rerun_completes(
    llm: LLMStandIn, tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # Under the 20 requests the week takes, and enough that the rerun needs less: the first run
    # fetches 15 to 18 (those in flight hold back up to 3), so at least 2 PRs whole.
    with limited_github(clock, core_limit=18) as github:
        env = cli(github, llm, tmp_path, PRHUB_GITHUB_WAIT="60")
        result = prhub(env, *WEEK)
        assert result.exit_code == 8, result.stderr
        error = result.stderr.splitlines()[-1]
        reset = datetime.fromtimestamp(github.limits.state("core")[2] + 1).astimezone()
        assert error.startswith("prhub: error: GitHub's rate limit for core requests is spent")
        assert "in 61 min, longer than the 60 s wait allowed (PRHUB_GITHUB_WAIT)" in error
        assert error.endswith(f"what was fetched is kept; rerun after {reset:%H:%M} (local time)")
        assert 15 <= github.charged()["core"] <= 18 and github.charged()["refused"] == 0
        kept = stored_numbers(tmp_path / "store.db")
        assert kept and kept < set(WEEK_31)
        first = len(github.requests)

        clock.sleep(3600)  # the hour passes
        again = prhub(env, *WEEK)
        assert_ok(again)
        asked = {r["path"] for r in github.requests[first:]}
    assert not any(f"/pulls/{n}" in path for n in kept for path in asked)  # nothing fetched twice
    assert stored_numbers(tmp_path / "store.db") == set(WEEK_31)
    assert (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md").is_file()


def test_repositories_of_one_run_share_one_budget(
    llm: LLMStandIn, tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prhub.toml").write_text('repos = ["acme/a", "acme/b"]\n', encoding="utf-8")
    mirrors = {"acme/a": "acme/rocket", "acme/b": "acme/rocket"}
    # 20 requests a repository, 40 in all: one wait, once the first repository spent most.
    with limited_github(clock, core_limit=30, core_window=600, mirrors=mirrors) as github:
        started = clock.time()
        result = prhub(cli_env(github, llm, tmp_path / "store.db"), *WEEK, "--all")
        assert_ok(result)
        assert github.charged()["refused"] == 0  # the second knew what the first had spent
        assert github.charged()["core"] == 40
    assert 601 <= clock.time() - started <= 610
    countdown = [line for line in result.stderr.splitlines() if "seconds waited" in line]
    assert countdown and countdown[-1].endswith(("601/601", "602/602"))


def test_a_wait_of_0_never_waits(github: GitHubStandIn) -> None:
    github.script(r"/pulls/101$", [secondary_limit(retry_after=1)])
    with closing(GitHubSource(settings(github, github_wait=0))) as source:
        with pytest.raises(LimitReached, match="longer than the 0 s wait allowed"):
            source.pull_payload(REPO, 101)


def test_unauthenticated_the_stop_says_how_to_get_more() -> None:
    budget = budget_for(Settings(github_wait=0))
    sent = budget.admit("core")
    told = {
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": "9999999999",
        "x-ratelimit-limit": "60",
    }
    limited = budget.settle("core", sent, 403, told, "API rate limit exceeded for 127.0.0.1.")
    assert limited is not None and limited.kind == "primary"
    with pytest.raises(LimitReached, match="kept; export GITHUB_TOKEN for a higher limit; rerun"):
        budget.wait(limited, "fetching")


# Secondary limits


def test_a_secondary_limit_without_retry_after_waits_a_minute_then_two(
    github: GitHubStandIn,
) -> None:
    github.script(r"/pulls/101$", [secondary_limit(), secondary_limit(429)])
    clock, counter = FakeClock(), retry.StopToken()
    shown: list[tuple[int, int]] = []
    source = GitHubSource(
        settings(github), stop=counter, budget=clock.budget(), countdown=lambda *t: shown.append(t)
    )
    with closing(source):
        assert source.pull_payload(REPO, 101)["number"] == 101
    assert sum(clock.slept) == pytest.approx(180)  # 60 s, then twice that
    assert counter.retries == 2 and len(github.requests) == 3
    assert (0, 60) in shown and (60, 60) in shown and (120, 120) in shown


def test_a_burst_refused_together_is_one_strike() -> None:
    now = [1000.0]
    budget = Budget(900, clock=lambda: now[0])
    sent = [budget.admit("core") for _ in range(4)]
    refusals = [
        budget.settle("core", s, 403, {}, "You have exceeded a secondary rate limit.") for s in sent
    ]
    assert {r.until for r in refusals if r} == {1060.0}  # not 60, 120, 240 and 480 s
    now[0] = 1061.0
    again = budget.settle("core", budget.admit("core"), 403, {}, "secondary rate limit")
    assert again is not None and again.until == 1061.0 + 120 and again.strikes == 2


def test_github_refusing_again_and_again_stops_the_run(github: GitHubStandIn) -> None:
    github.script(r"/pulls/101$", [secondary_limit(retry_after=1)] * 10)
    clock = FakeClock()
    with closing(GitHubSource(settings(github), budget=clock.budget(attempts=3))) as source:
        with pytest.raises(LimitReached, match="refused 4 requests in a row"):
            source.pull_payload(REPO, 101)
    assert len(github.requests) == 4 and sum(clock.slept) == pytest.approx(3)


def test_an_answer_between_refusals_starts_the_count_again(github: GitHubStandIn) -> None:
    github.script(r"/pulls/101$", [secondary_limit()])
    github.script(r"/pulls/102$", [secondary_limit()])
    clock = FakeClock()
    with closing(GitHubSource(settings(github), budget=clock.budget())) as source:
        source.pull_payload(REPO, 101)  # refused, waited 60 s, answered
        source.pull_payload(REPO, 102)  # refused: a first strike again
    assert sum(clock.slept) == pytest.approx(120)


# Revalidation: stored PRs cost nothing when unchanged


@pytest.mark.parametrize(
    "lag", [timedelta(0), timedelta(hours=1)], ids=["search-agrees", "search-lags"]
)
def test_a_rerun_of_an_unchanged_week_spends_no_primary_request_on_stored_prs(
    llm: LLMStandIn, tmp_path: Path, lag: timedelta, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with GitHubStandIn(FIXTURES / "github", token=GITHUB_TOKEN, index_lag=lag) as github:
        env = cli(github, llm, tmp_path)
        assert_ok(prhub(env, *WEEK))
        assert github.charged_per_pr() == dict.fromkeys(WEEK_31, 3)
        first = len(github.requests)
        again = prhub(env, *WEEK)
        assert_ok(again)
        rerun = github.requests[first:]
    assert "6 PRs (6 from the store, 0 failed)" in again.stderr
    assert [r for r in rerun if r.get("charge") == "core" and "/pulls/" in r["path"]] == []
    revalidated = sorted(r["path"] for r in rerun if r.get("charge") == "free")
    if lag:  # the search hit cannot vouch for the stored copy: each is asked, and is a 304
        assert revalidated == [f"/repos/{REPO}/pulls/{n}" for n in WEEK_31]
        assert all(r["headers"].get("if-none-match") for r in rerun if "/pulls/" in r["path"])
    else:  # the search hit's updated_at vouches for it: not even asked
        assert revalidated == []


def test_summarize_again_revalidates_the_stored_pr_with_a_304(
    env: dict[str, str | None], github: GitHubStandIn
) -> None:
    assert_ok(prhub(env, "summarize", "--pr", "101"))
    first = len(github.requests)
    assert_ok(prhub(env, "summarize", "--pr", "101"))
    pulls = [r for r in github.requests[first:] if "/pulls/" in r["path"]]
    # The PR and the one its body relates it to (#102), each a free 304.
    assert [(r["path"], r["charge"]) for r in pulls] == [
        (f"/repos/{REPO}/pulls/101", "free"),
        (f"/repos/{REPO}/pulls/102", "free"),
    ]
    assert pulls[0]["headers"]["if-none-match"].startswith('W/"')
    assert pulls[0]["headers"]["if-modified-since"].endswith(" GMT")


def test_a_pr_that_changed_is_fetched_again_whatever_its_etag(
    llm: LLMStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "github"
    shutil.copytree(FIXTURES / "github", data)
    pull = data / "acme" / "rocket" / "pulls" / "101.json"
    with GitHubStandIn(data, token=GITHUB_TOKEN) as github:
        env = cli(github, llm, tmp_path)
        assert_ok(prhub(env, "summarize", "--pr", "101"))
        payload = json.loads(pull.read_text())
        pull.write_text(
            json.dumps({**payload, "updated_at": "2026-08-05T00:00:00Z", "title": "fix: it, again"})
        )
        first = len(github.requests)
        assert_ok(prhub(env, "summarize", "--pr", "101"))
        asked = [
            (r["path"], r["charge"]) for r in github.requests[first:] if "/pulls/" in r["path"]
        ]
    assert asked[0] == (f"/repos/{REPO}/pulls/101", "core")  # its ETag no longer matched
    assert (f"/repos/{REPO}/pulls/101/files", "core") in asked
    with closing(Store(tmp_path / "store.db")) as store:
        kept = store.pull(REPO, 101)
    assert kept is not None and kept.pr.title == "fix: it, again" and kept.etag.startswith('W/"')


def test_a_stored_pr_without_validators_gets_them_on_its_next_fetch(
    github: GitHubStandIn, tmp_path: Path
) -> None:
    config = settings(github, tmp_path)
    with (
        closing(GitHubSource(config, stop=retry.StopToken())) as source,
        closing(Store(config.store)) as store,
    ):
        with Run(config, "summarize", source=source, store=store) as run:
            pr = run.load_pr(101)
        store.save_validators(REPO, 101, "", "")  # as a store from before validators
        with Run(config, "summarize", source=source, store=store) as run:
            assert run.load_pr(101) == pr
        kept = store.pull(REPO, 101)
        assert kept is not None and kept.etag
        assert source.revalidate(REPO, 101, Validators(kept.etag, kept.last_modified))[0] is None


# Settings


def test_the_wait_is_a_setting_of_0_or_more(tmp_path: Path) -> None:
    assert load_settings(env={"PRHUB_GITHUB_WAIT": "120"}, cwd=tmp_path).github_wait == 120
    assert load_settings(env={}, cwd=tmp_path).github_wait == 900
    with pytest.raises(ConfigError, match="PRHUB_GITHUB_WAIT: must be 0 or more"):
        load_settings(env={"PRHUB_GITHUB_WAIT": "-1"}, cwd=tmp_path)


def test_the_plan_is_logged_before_a_week(
    github: GitHubStandIn, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = settings(github, tmp_path)
    with caplog.at_level(logging.INFO, logger="prhub"), Run(config, "dry-run") as run:
        run.fetch_window(window(config, year=2026, week=31))
        run.fetch_window(window(config, year=2026, week=31))
    plans = [r.getMessage() for r in caplog.records if "needs about" in r.getMessage()]
    assert plans[0].startswith(
        "GitHub: fetching 6 PRs of acme/rocket needs about 18 core requests; "
    )
    assert plans[1].startswith(
        "GitHub: fetching 6 PRs of acme/rocket needs about 0 core requests; "
    )
