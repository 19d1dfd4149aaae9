"""`prhub forget`: a week, a window, a PR's digest or a repository taken out of the store, and
the fetched data of published PRs pruned; each said in one line, nothing else touched."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from prhub.store.store import Store
from tests.factories import REPO, assert_ok, prhub
from tests.standins import GitHubStandIn, LLMStandIn

W31 = ("--week", "31", "--year", "2026")
SITE = "the next `prhub site` removes its pages"


def rows(store: Path, table: str) -> int:
    with closing(sqlite3.connect(store)) as db:
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def stems(store: Path) -> list[str]:
    """The stored reports' windows, as (start, tz)."""
    with closing(Store(store)) as s:
        return sorted(f"{r.facts.start.isoformat()} {r.facts.tz}" for r in s.reports(REPO))


def forget(env: dict[str, str | None], *args: str) -> str:
    done = prhub(env, "forget", *args)
    assert_ok(done)
    [line] = done.stderr.splitlines()
    return line


@pytest.fixture
def two_zones(env: dict[str, str | None], store: Path) -> dict[str, str | None]:
    """Week 31 made in the default timezone and in UTC: two reports, two narratives."""
    assert_ok(prhub(env, "weekly", *W31))
    assert_ok(prhub(env, "weekly", *W31, "--tz", "UTC"))
    assert rows(store, "reports") == 2 and rows(store, "narratives") == 2
    return env


def test_a_week_in_one_timezone_goes_with_its_narrative(
    two_zones: dict[str, str | None], store: Path
) -> None:
    digests, pulls = rows(store, "digests"), rows(store, "pulls")
    dry = forget(two_zones, *W31, "--tz", "UTC", "--dry-run")
    assert dry == f"prhub: would forget the report {REPO} 2026-W31.UTC and its narrative; {SITE}"
    assert rows(store, "reports") == 2  # a dry run removes nothing
    said = forget(two_zones, *W31, "--tz", "UTC")
    assert said == f"prhub: forgot the report {REPO} 2026-W31.UTC and its narrative; {SITE}"
    assert stems(store) == ["2026-07-27T00:00:00+08:00 Asia/Shanghai"]
    assert (rows(store, "narratives"), rows(store, "digests"), rows(store, "pulls")) == (
        1,
        digests,
        pulls,
    )  # the PRs and their digests belong to every window that holds them


def test_nothing_forgotten_says_so_and_names_the_other_timezone(
    two_zones: dict[str, str | None], store: Path
) -> None:
    forget(two_zones, *W31)  # the default timezone's report
    said = forget(two_zones, *W31)
    assert said == (
        f"prhub: nothing to forget: the store holds no report of {REPO} 2026-W31; "
        "it holds 2026-W31.UTC: pass --tz to name its timezone"
    )
    assert forget(two_zones, "--week", "30", "--year", "2026") == (
        f"prhub: nothing to forget: the store holds no report of {REPO} 2026-W30"
    )
    assert rows(store, "reports") == 1


def test_a_window_of_dates_is_forgotten(env: dict[str, str | None], store: Path) -> None:
    dates = ("--since", "2026-07-27", "--until", "2026-07-29")
    assert_ok(prhub(env, "weekly", *dates))
    said = forget(env, *dates)
    assert said.startswith(f"prhub: forgot the report {REPO} 2026-07-27_2026-07-29")
    assert rows(store, "reports") == 0


def test_a_digest_in_a_stored_report_is_refused_until_its_week_goes(
    two_zones: dict[str, str | None], store: Path
) -> None:
    refused = prhub(two_zones, "forget", "--pr", "101")
    assert refused.exit_code == 3
    assert refused.stderr == (
        f"prhub: error: {REPO}#101 is in the stored report 2026-W31.UTC, 2026-W31: forget that "
        "week first, or keep its digest\n"
    )
    forget(two_zones, *W31)
    forget(two_zones, *W31, "--tz", "UTC")
    before = rows(store, "digests")
    said = forget(two_zones, "--pr", "101")
    assert said.startswith(
        f"prhub: forgot {REPO}#101: 0 reports, 0 narratives, 1 digest, 1 fetched PR ("
    )
    assert rows(store, "digests") == before - 1
    assert forget(two_zones, "--pr", "101") == (
        f"prhub: nothing to forget: the store holds no digest of {REPO}#101"
    )


def test_a_whole_repository_goes_but_the_record_of_its_runs(
    two_zones: dict[str, str | None], store: Path
) -> None:
    runs, digests, pulls = rows(store, "runs"), rows(store, "digests"), rows(store, "pulls")
    said = forget(two_zones, "--whole-repo", "--repo", "ACME/Rocket")  # the store's spelling
    counts = f"2 reports, 2 narratives, {digests} digests, {pulls} fetched PRs ("
    assert said.startswith(f"prhub: forgot {REPO}: {counts}") and said.endswith(SITE)
    for table in ("reports", "narratives", "digests", "pulls", "attributes"):
        assert rows(store, table) == 0, table
    assert rows(store, "runs") == runs
    assert forget(two_zones, "--whole-repo") == (
        f"prhub: nothing to forget: the store holds nothing of {REPO}"
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "name what to forget"),
        (("--pr", "101", "--whole-repo"), "name one thing to forget"),
        ((*W31, "--pull-data"), "name one thing to forget"),
    ],
)
def test_one_thing_to_forget_is_named(
    env: dict[str, str | None], args: tuple[str, ...], says: str
) -> None:
    done = prhub(env, "forget", *args)
    assert done.exit_code == 2
    assert says in done.stderr and "--whole-repo" in done.stderr


def test_without_a_store_nothing_is_made(env: dict[str, str | None], store: Path) -> None:
    assert forget(env, *W31) == f"prhub: nothing to forget: there is no store at {store}"
    assert not store.exists()


def test_pruned_pull_data_costs_a_rerun_github_requests_and_no_llm_call(
    env: dict[str, str | None],
    store: Path,
    tmp_path: Path,
    github: GitHubStandIn,
    llm: LLMStandIn,
) -> None:
    assert_ok(prhub(env, "weekly", *W31))
    report = tmp_path / "reports" / REPO / "2026-W31.md"
    first = report.read_bytes()
    assert rows(store, "pulls") == 6
    dry = forget(env, "--pull-data", "--dry-run")
    assert dry.startswith("prhub: would prune the fetched data of 6 PRs of 1 repository (")
    assert rows(store, "pulls") == 6
    said = forget(env, "--pull-data")
    predicted = int(said.split("again, about ")[1].split()[0])
    assert said.startswith("prhub: pruned the fetched data of 6 PRs of 1 repository (")
    assert "; the store went from " in said and "makes no LLM call" in said
    assert rows(store, "pulls") == 0 and rows(store, "digests") == 6
    calls, asked = len(llm.requests), len(github.requests)
    assert_ok(prhub(env, "weekly", *W31))
    assert len(llm.requests) == calls  # every digest and the narrative came from the store
    pulls = [r for r in github.requests[asked:] if re.search(r"/(pulls|issues)/\d+", r["path"])]
    assert len(pulls) == predicted  # each pruned PR fetched again, as the line said
    assert report.read_bytes() == first
    assert rows(store, "pulls") == 6  # kept again by the rerun
    assert forget(env, "--pull-data", "--repo", "acme/other") == (
        "prhub: nothing to prune: the store holds no fetched data of a published PR"
    )


def test_the_next_site_build_removes_a_forgotten_weeks_pages(
    two_zones: dict[str, str | None], tmp_path: Path
) -> None:
    site = tmp_path / "site"
    assert_ok(prhub(two_zones, "site", str(site), "--no-pdf"))
    page = site / REPO / "2026-W31.UTC.html"
    assert page.is_file() and (site / REPO / "2026-W31.html").is_file()
    forget(two_zones, *W31, "--tz", "UTC")
    rebuilt = prhub(two_zones, "site", str(site), "--no-pdf")
    assert_ok(rebuilt)
    assert not page.exists() and not page.with_suffix(".json").exists()
    assert (site / REPO / "2026-W31.html").is_file()
    assert " removed" in rebuilt.stderr and " 0 removed" not in rebuilt.stderr
